"""mmssl: an OpenMMLab-style toolbox for self-supervised visual pretraining.

Importing mmssl checks that the installed mmengine, mmcv and mmpretrain are
versions mmssl supports, and says what to install when they are not.
"""

import warnings
from importlib import metadata

from .version import __version__, version_info

# (distribution names, minimum inclusive, maximum exclusive)
_REQUIRED = {
    'mmengine': (('mmengine', 'mmengine-lite'), '0.10.0', '1.0.0'),
    'mmcv': (('mmcv', 'mmcv-lite'), '2.0.0', '2.4.0'),
    'mmpretrain': (('mmpretrain',), '1.2.0', '1.3.0'),
}


def _digits(version: str) -> tuple:
    """Turn ``'2.2.0rc1'`` into ``(2, 2, 0)`` for range comparisons."""
    parts = []
    for piece in version.split('+')[0].split('.')[:3]:
        num = ''
        for ch in piece:
            if not ch.isdigit():
                break
            num += ch
        parts.append(int(num) if num else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def _installed_version(dist_names: tuple) -> str | None:
    for name in dist_names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def check_dependencies() -> None:
    """Raise ImportError naming the package and the range to install.

    Raises:
        ImportError: if mmengine, mmcv or mmpretrain is missing or outside
            the supported range.
    """
    problems = []
    for module, (dists, low, high) in _REQUIRED.items():
        found = _installed_version(dists)
        want = f'{dists[-1] if module == "mmcv" else dists[0]}>={low},<{high}'
        if found is None:
            problems.append(f'{module} is not installed: pip install "{want}"')
        elif not _digits(low) <= _digits(found) < _digits(high):
            problems.append(
                f'{module} {found} is not supported by mmssl '
                f'{__version__}: pip install "{want}"'
            )
    if problems:
        raise ImportError(
            'mmssl found incompatible dependencies:\n  '
            + '\n  '.join(problems)
        )


check_dependencies()

# mmcv-lite has no compiled ops; mmcv warns about that on every import even
# though mmssl never uses them.
warnings.filterwarnings(
    'ignore', message='Fail to import ``MultiScaleDeformableAttention``'
)

__all__ = ['__version__', 'version_info', 'check_dependencies']
