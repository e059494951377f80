"""Reading config files: :func:`load_config`, the one loader of every
tool and API (a file, its ``--cfg-options`` merged and their keys checked).

mmengine 0.10.7 finds the installed folder of the package named in a
cross-package base (``_base_ = 'mmpretrain::mocov2/...py'``, used by the
ImageNet configs) through ``pkg_resources``, which setuptools removed in
version 81; there every such config fails with ``No module named
'pkg_resources'``. Two ways out, neither of which changes mmengine when
mmssl is imported:

* install ``setuptools<81`` (requirements/runtime.txt pins it), so
  ``Config.fromfile`` works everywhere, or
* load configs with :func:`load_config` (every tool does): when, and only
  when, mmengine's own lookup cannot work, it lends mmengine an
  :mod:`importlib`-based lookup for the duration of that one
  ``Config.fromfile`` call and puts mmengine's functions back afterwards.
"""

import contextlib
import difflib
import glob
import importlib.util
import os.path as osp
import sys
from typing import Any, Iterator, List, Optional

from mmssl.errors import TrainConfigError, config_syntax_error

from .options import UnknownConfigKeyError, merge_cfg_options

_LOOKUP_MODULES = (
    'mmengine.config.config',
    'mmengine.utils',
    'mmengine.utils.package_utils',
)


def _is_installed(package: str) -> bool:
    """Whether ``package`` can be imported (importlib-based)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None


def _get_installed_path(package: str) -> str:
    """The folder of the installed package ``package``.

    Raises:
        ModuleNotFoundError: if ``package`` cannot be imported.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            f'{package} is not installed; install it to use configs that '
            f'inherit from "{package}::..."'
        )
    return osp.dirname(spec.origin)


def mmengine_lookup_works() -> bool:
    """Whether mmengine's own package lookup runs in this environment."""
    from mmengine.utils import package_utils

    try:
        package_utils.is_installed('mmengine')
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def package_lookup() -> Iterator[None]:
    """Scope in which mmengine can resolve ``package::`` config bases.

    Does nothing when mmengine's lookup works (``pkg_resources`` present,
    or an mmengine that no longer needs it). Otherwise mmengine's
    ``is_installed``/``get_installed_path`` are replaced inside the scope
    only and restored on exit.
    """
    if mmengine_lookup_works():
        yield
        return
    import importlib

    modules = [importlib.import_module(name) for name in _LOOKUP_MODULES]
    saved = [(m, m.is_installed, m.get_installed_path) for m in modules]
    try:
        for module in modules:
            module.is_installed = _is_installed
            module.get_installed_path = _get_installed_path
        yield
    finally:
        for module, is_inst, get_path in saved:
            module.is_installed = is_inst
            module.get_installed_path = get_path


class ConfigFileNotFoundError(FileNotFoundError):
    """A config path that is not a file; the message names the nearest
    config files under ``configs/``."""

    def __init__(self, path: str) -> None:
        near = nearest_config_names(path)
        hint = f'; did you mean {" or ".join(near)}?' if near else '.'
        super().__init__(f'config file {path} does not exist{hint}')
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])


#: What :func:`load_config` raises for a config it cannot give as asked:
#: a missing file (or ``_base_``), a bad ``--cfg-options`` key or index.
LOAD_ERRORS = (FileNotFoundError, UnknownConfigKeyError, IndexError, TypeError)


def nearest_config_names(
    path: str, configs_dir: Optional[str] = None, n: int = 3
) -> List[str]:
    """Config files under ``configs/`` whose names are closest to ``path``.

    Args:
        path (str): The config path that does not exist.
        configs_dir (str, optional): Folder searched recursively; default:
            ``configs/`` of the current folder, else of this checkout.
        n (int): At most this many names.

    Returns:
        list[str]: Paths (as ``configs/...``), nearest first.
    """
    if configs_dir is None:
        here = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
        candidates = ('configs', osp.join(here, 'configs'))
        configs_dir = next((d for d in candidates if osp.isdir(d)), None)
    if configs_dir is None:
        return []
    files = glob.glob(osp.join(configs_dir, '**', '*.py'), recursive=True)
    by_name = {}
    for f in files:
        if '_base_' not in f.split(osp.sep):
            by_name.setdefault(osp.basename(f), f)
    names = difflib.get_close_matches(
        osp.basename(path), list(by_name), n=n, cutoff=0.6
    )
    root = osp.dirname(osp.abspath(configs_dir))
    return [osp.relpath(by_name[name], root) for name in names]


def _read(filename: str):
    """``mmengine.Config.fromfile`` that also works without pkg_resources.

    Raises:
        ConfigFileNotFoundError: ``filename`` is not a file.
    """
    from mmengine.config import Config

    if not osp.isfile(filename):
        raise ConfigFileNotFoundError(filename)
    with package_lookup():
        return Config.fromfile(filename)


def load_config(
    config: Any,
    cfg_options: Optional[dict] = None,
    allow_new_keys: bool = False,
    *,
    notes: Optional[List[str]] = None,
    exit_on_error: bool = False,
):
    """Read a config, merge ``--cfg-options`` into it, check their keys.

    The one config loader: every tool, ``prepare_train_cfg`` and
    ``init_model`` call it. The file is read with ``Config.fromfile``
    (``mmpretrain::`` bases work without ``pkg_resources``) and the
    overrides merged with :func:`mmssl.config.options.merge_cfg_options`:
    a key the config lacks is an error with a did-you-mean, unless
    ``allow_new_keys``. ``custom_imports`` (also ones the options add)
    are imported.

    Args:
        config (str | mmengine.Config): Config file, or a loaded config
            (changed in place).
        cfg_options (dict, optional): ``{dotted key: value}``, as
            :class:`~mmssl.config.values.CfgOptionsAction` parses them.
        allow_new_keys (bool): Accept keys the config lacks.
        notes (list, optional): Receives the merge's notes (a key added,
            a config variable whose copies keep the old value); without
            it they are logged as warnings.
        exit_on_error (bool): For command-line tools: print the error as
            one line, ``error: ...``, on stderr and exit with status 2.

    Returns:
        mmengine.Config: The config, not yet resolved
        (:func:`mmssl.config.resolve`).

    Raises:
        ConfigFileNotFoundError: ``config`` is not a file.
        FileNotFoundError: A ``_base_`` file is missing.
        UnknownConfigKeyError, IndexError, TypeError: For a bad key, see
            :func:`mmssl.config.options.merge_cfg_options`.
        TrainConfigError: The file or a base is not valid Python (the
            line and its text are named).
        SystemExit: Instead of these, with ``exit_on_error``.
    """
    try:
        try:
            cfg = _read(config) if isinstance(config, str) else config
        except SyntaxError as err:  # the file (or a base) does not parse
            raise config_syntax_error(str(config), err) from err
        lines = merge_cfg_options(cfg, cfg_options, allow_new_keys)
    except (*LOAD_ERRORS, TrainConfigError) as exc:
        if not exit_on_error:
            raise
        print(f'error: {exc}', file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    if notes is not None:
        notes.extend(lines)
    else:
        from mmengine.logging import print_log

        for line in lines:
            print_log(line, logger='current', level=30)
    if cfg.get('custom_imports'):  # e.g. added with --cfg-options
        from mmengine.utils import import_modules_from_strings

        import_modules_from_strings(**cfg.custom_imports)
    return cfg
