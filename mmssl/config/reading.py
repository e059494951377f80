"""Reading config files: :func:`load_config` (a file plus
``--cfg-options``) and :func:`load_config_file`, which also loads configs
whose ``_base_`` names another package without
``pkg_resources``.

mmengine 0.10.7 finds the installed folder of the package named in a
cross-package base (``_base_ = 'mmpretrain::mocov2/...py'``, used by the
ImageNet configs) through ``pkg_resources``, which setuptools removed in
version 81; there every such config fails with ``No module named
'pkg_resources'``. Two ways out, neither of which changes mmengine when
mmssl is imported:

* install ``setuptools<81`` (requirements/runtime.txt pins it), so
  ``Config.fromfile`` works everywhere, or
* load configs with :func:`load_config_file` (tools/train.py and
  tools/test.py do): when, and only when, mmengine's own lookup cannot
  work, it lends mmengine an :mod:`importlib`-based lookup for the
  duration of that one ``Config.fromfile`` call and puts mmengine's
  functions back afterwards.
"""

import contextlib
import importlib.util
import os.path as osp
from typing import Any, Iterator

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


def load_config_file(filename: str, **kwargs: Any):
    """``mmengine.Config.fromfile`` that also works without pkg_resources.

    Args:
        filename (str): Config file.
        **kwargs: Passed to ``Config.fromfile``.

    Returns:
        mmengine.Config: The config.
    """
    from mmengine.config import Config

    with package_lookup():
        return Config.fromfile(filename, **kwargs)


def load_config(
    config: str,
    cfg_options: dict | None = None,
    allow_new_keys: bool = False,
):
    """Read a config file and apply ``--cfg-options`` overrides.

    The file is read with :func:`load_config_file` (``mmpretrain::`` bases
    work without ``pkg_resources``) and the overrides merged with
    :func:`mmssl.config.options.merge_cfg_options`, as tools/train.py
    does: a key the config lacks is an error unless ``allow_new_keys``.
    Notes are logged as warnings.

    Returns:
        mmengine.Config: The config, not yet resolved
        (:func:`mmssl.config.resolve`).

    Raises:
        FileNotFoundError: when ``config`` is not a file.
        UnknownConfigKeyError, IndexError, TypeError: for a bad key, see
            :func:`mmssl.config.options.merge_cfg_options`.
    """
    from mmengine.logging import print_log

    from .options import merge_cfg_options

    if not osp.isfile(config):
        raise FileNotFoundError(f'Config file not found: {config}')
    cfg = load_config_file(config)
    for note in merge_cfg_options(cfg, cfg_options, allow_new_keys):
        print_log(note, logger='current', level=30)
    return cfg
