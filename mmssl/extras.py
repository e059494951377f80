"""Optional dependencies, imported on first use with a clear message.

mmssl imports without its optional extras. A class that needs one calls
:func:`require_3d` (MONAI) or :func:`require_multichannel` (tifffile)
when it is built, so a config run without the extra fails at once and
says what to install.
"""

import importlib
from types import ModuleType

#: Extra name -> (import names, pip requirement strings).
_EXTRAS = {
    '3d': (('monai', 'nibabel'), ('monai>=1.5', 'nibabel')),
    'multichannel': (('tifffile',), ('tifffile>=2023.1',)),
}
_MIN_MONAI = (1, 5)


def _version_tuple(version: str) -> tuple:
    out = []
    for piece in version.split('+')[0].split('.')[:2]:
        digits = ''.join(ch for ch in piece if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def require_3d(what: str) -> ModuleType:
    """Import and return ``monai`` for ``what``, or say how to install it.

    Args:
        what (str): The class or config that needs it (named in the
            message).

    Raises:
        ImportError: MONAI or nibabel is missing, or MONAI is older than
            1.5; the message names the extra ``pip install -e ".[3d]"``.
    """
    names, reqs = _EXTRAS['3d']
    modules = {}
    for name in names:
        try:
            modules[name] = importlib.import_module(name)
        except ImportError as e:
            raise ImportError(
                f'{what} needs the optional 3D dependencies '
                f'({", ".join(reqs)}); {name} cannot be imported ({e}). '
                'Install them with: pip install -e ".[3d]" (from the mmssl '
                'checkout) or pip install ' + ' '.join(f'"{r}"' for r in reqs)
            ) from e
    monai = modules['monai']
    version = getattr(monai, '__version__', '0')
    if _version_tuple(version) < _MIN_MONAI:
        raise ImportError(
            f'{what} needs monai>=1.5, found {version}. Upgrade with: '
            'pip install -e ".[3d]"'
        )
    return monai


def require_multichannel(what: str) -> ModuleType:
    """Import and return ``tifffile`` for ``what``, or say how to install.

    Args:
        what (str): The class or config that needs it (named in the
            message).

    Raises:
        ImportError: tifffile is missing; the message names the extra
            ``pip install -e ".[multichannel]"``.
    """
    (name,), reqs = _EXTRAS['multichannel']
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(
            f'{what} needs the optional multi-channel TIFF dependency '
            f'({reqs[0]}); {name} cannot be imported ({e}). Install it '
            'with: pip install -e ".[multichannel]" (from the mmssl '
            f'checkout) or pip install "{reqs[0]}"'
        ) from e


__all__ = ['require_3d', 'require_multichannel']
