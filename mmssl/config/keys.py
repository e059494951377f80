"""Unknown top-level keys in a config file stop the run.

A config file is Python: any name it assigns becomes a config key, and
mmengine's Runner reads only the keys it knows, so ``output_dir = '...'``
(meant: ``work_dir``) is silently ignored. :func:`check_top_level_keys`
refuses such a key with the same did-you-mean message as a mistyped
``--cfg-options`` key.

Allowed at the top level:

* the keys mmengine's ``Runner.from_cfg`` and mmssl read
  (:data:`KNOWN_TOP_LEVEL_KEYS`);
* the variables OpenMMLab configs conventionally share between blocks
  (:data:`CONVENTIONAL_VARIABLES`, e.g. ``train_pipeline``);
* every key a base config of *another package* defines (``_base_ =
  'mmpretrain::...'``): those files are not ours to rename;
* any key starting with ``_``: the opt-out for one's own variables
  (``_max_epochs = 100``, ``_knn_pipeline = [...]``).
"""

import ast
import os
import os.path as osp
import re
from typing import Iterable, List, Optional, Set

from .options import RUNNER_KNOWN_KEYS, UnknownConfigKeyError, _suggest

#: mmssl's own top-level keys (read by SSLRunner and tools/train.py).
MMSSL_KEYS = frozenset(
    {
        'model',  # Runner.from_cfg reads it (a required argument)
        'runner_type',
        'signal_cfg',
        'checkpoint_every_minutes',
        'trust_checkpoint',
        'lock_cfg',
        'data_preprocessor',
        'work_dir',
    }
)

#: Every top-level key the Runner or mmssl reads.
KNOWN_TOP_LEVEL_KEYS = frozenset(
    {k for k in RUNNER_KNOWN_KEYS if '.' not in k} | MMSSL_KEYS
)

#: Variables OpenMMLab configs name by convention and share between
#: blocks (mmpretrain's base configs define them too); allowed on purpose.
CONVENTIONAL_VARIABLES = frozenset(
    {
        'dataset_type',
        'data_root',
        'backend_args',
        'file_client_args',
        'train_pipeline',
        'val_pipeline',
        'test_pipeline',
        'vis_backends',
    }
)


#: Keys whose nearest known name would point the wrong way.
HINTS = {
    'optimizer': 'The optimizer goes inside the wrapper: `optim_wrapper = '
    "dict(type='OptimWrapper', optimizer=dict(...))`; a top-level "
    '`optimizer` is read by nobody (an MMSelfSup config? run '
    'tools/misc/migrate_mmselfsup.py).',
}


def check_not_mmselfsup(cfg, filename: Optional[str] = None) -> None:
    """Refuse an MMSelfSup 1.x config (``default_scope='mmselfsup'``)
    with the one command that converts it.

    Raises:
        UnknownConfigKeyError: Naming the migration tool.
    """
    if cfg.get('default_scope') != 'mmselfsup':
        return
    name = filename or 'CONFIG'
    raise UnknownConfigKeyError(
        f"{name} is an MMSelfSup 1.x config (default_scope='mmselfsup'); "
        f'convert it first: python tools/misc/migrate_mmselfsup.py {name} '
        '-o NEW_CONFIG.py (docs/en/migrate_mmselfsup.md)'
    )


#: mmengine's ``{{$NAME:default}}`` placeholder for an environment variable
_ENV_PLACEHOLDER = re.compile(r'\{\{[\'"]?\s*\$(\w+)\s*:\s*(.*?)\s*[\'"]?\}\}')


def _base_entries(filename: str) -> List[str]:
    """The ``_base_`` entries a config file assigns (read with ast), with
    environment placeholders filled in as mmengine fills them (e.g.
    ``_base_ = '{{$RECIPE:}}'`` in configs/custom/image_folder.py)."""
    try:
        with open(filename, encoding='utf-8') as f:
            text = _ENV_PLACEHOLDER.sub(
                lambda m: os.environ.get(m.group(1), m.group(2)), f.read()
            )
            tree = ast.parse(text, filename)
    except (OSError, SyntaxError, ValueError):
        return []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == '_base_'
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return []
            return [value] if isinstance(value, str) else list(value)
    return []


def foreign_base_keys(filename: Optional[str], _seen=None) -> Set[str]:
    """Top-level keys inherited from base configs of other packages.

    Follows the local ``_base_`` chain of ``filename``; each
    ``'pkg::path'`` base met on the way is loaded and all its keys are
    returned.

    Args:
        filename (str, optional): The config file.

    Returns:
        set[str]: The keys (empty when there is no such base).
    """
    seen = _seen if _seen is not None else set()
    if not filename or filename in seen or not osp.isfile(filename):
        return set()
    seen.add(filename)
    keys: Set[str] = set()
    for base in _base_entries(filename):
        if not isinstance(base, str):
            continue
        if '::' in base:
            from .reading import load_config

            path = _package_config_path(base)
            if path is not None:
                keys.update(load_config(path).keys())
        else:
            path = osp.join(osp.dirname(filename), base)
            keys |= foreign_base_keys(osp.normpath(path), seen)
    return keys


def _package_config_path(base: str) -> Optional[str]:
    """``'mmpretrain::mae/x.py'`` -> the file in the installed package."""
    from .reading import _get_installed_path

    package, rel = base.split('::', 1)
    try:
        root = _get_installed_path(package)
    except ModuleNotFoundError:
        return None
    for sub in (osp.join('.mim', 'configs'), 'configs'):
        path = osp.join(root, sub, rel)
        if osp.isfile(path):
            return path
    return None


def check_top_level_keys(
    keys: Iterable[str],
    filename: Optional[str] = None,
    allowed: Iterable[str] = (),
) -> None:
    """Refuse unknown top-level config keys with a did-you-mean.

    Args:
        keys (Iterable[str]): The config's top-level keys.
        filename (str, optional): The config file, to allow the keys its
            other-package bases define.
        allowed (Iterable[str]): More keys to accept.

    Raises:
        UnknownConfigKeyError: Naming each unknown key, the nearest known
            ones and the ``_`` opt-out.
    """
    known = (
        KNOWN_TOP_LEVEL_KEYS
        | CONVENTIONAL_VARIABLES
        | set(allowed)
        | foreign_base_keys(filename)
    )
    unknown = sorted(
        k for k in keys if not str(k).startswith('_') and k not in known
    )
    if not unknown:
        return
    where = f' in {filename}' if filename else ''
    lines = [
        f'Unknown top-level config key `{key}`{where}. '
        + (HINTS.get(key) or _suggest(key, KNOWN_TOP_LEVEL_KEYS, []))
        for key in unknown
    ]
    lines.append(
        'mmengine would ignore it silently. Start the name with `_` '
        '(e.g. `_my_value = 1`) to keep a variable of your own.'
    )
    raise UnknownConfigKeyError('\n'.join(lines))
