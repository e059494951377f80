"""Let mmengine resolve ``'mmpretrain::...'`` config bases without
``pkg_resources``.

mmengine 0.10.7 finds the installed path of a package named in a
cross-package ``_base_`` (``_base_ = 'mmpretrain::mae/...py'``) through
``pkg_resources``, which setuptools removed in version 81. With a recent
setuptools every such config then fails with ``No module named
'pkg_resources'``. :func:`patch_mmengine_package_lookup` swaps in
equivalents built on :mod:`importlib` when, and only when,
``pkg_resources`` cannot be imported; mmssl calls it on import.
"""

import importlib.util
import os.path as osp


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


def patch_mmengine_package_lookup() -> bool:
    """Replace mmengine's pkg_resources-based package lookup if needed.

    Returns:
        bool: True if the lookup was patched, False if ``pkg_resources`` is
        available and mmengine's own functions are kept.
    """
    try:
        import pkg_resources  # noqa: F401

        return False
    except ImportError:
        pass
    import mmengine.config.config as config_module
    import mmengine.utils as utils_module
    import mmengine.utils.package_utils as package_utils

    for module in (config_module, utils_module, package_utils):
        module.is_installed = _is_installed
        module.get_installed_path = _get_installed_path
    return True
