"""mmssl: an OpenMMLab-style toolbox for self-supervised visual pretraining.

Importing mmssl checks that the installed torch, torchvision, mmengine, mmcv
and mmpretrain are versions mmssl supports, and says what to install when
they are not.
"""

import warnings
from importlib import metadata
from typing import Callable

from .version import __version__, version_info

# mmengine, mmcv and mmpretrain come from one of two stacks that install the
# same import names: OpenMMLab's own releases, or the OneDL forks
# (docs/en/get_started.md, "Which mm* stack"). Per import name and stack:
# (distribution names, minimum inclusive, maximum exclusive); the first
# distribution name is the one to pip install.
_REQUIRED = {
    'mmengine': {
        'openmmlab': (('mmengine', 'mmengine-lite'), '0.10.0', '1.0.0'),
        'onedl': (('onedl-mmengine',), '0.10.8', '1.0.0'),
    },
    'mmcv': {
        'openmmlab': (('mmcv-lite', 'mmcv'), '2.0.0', '2.4.0'),
        'onedl': (('onedl-mmcv',), '2.3.0', '2.4.0'),
    },
    'mmpretrain': {
        'openmmlab': (('mmpretrain',), '1.2.0', '1.3.0'),
        'onedl': (('onedl-mmpretrain',), '1.3.0', '1.4.0'),
    },
}

# torch and torchvision: the floors of requirements/runtime.txt (minimum
# inclusive, no maximum); pip must pick them as a matching pair.
_TORCH_MIN = {'torch': '2.6.0', 'torchvision': '0.21.0'}


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


def _installed_version(dist_name: str) -> str | None:
    """Version of the installed distribution ``dist_name``, or None."""
    try:
        return metadata.version(dist_name)
    except metadata.PackageNotFoundError:
        return None


def _pin(dists: tuple, low: str, high: str) -> str:
    return f'{dists[0]}>={low},<{high}'


def _check_module(
    module: str, version_of: Callable[[str], str | None]
) -> tuple[str | None, str | None]:
    """Check one import name; return (stack, problem), one of them None."""
    stacks = _REQUIRED[module]
    found = [
        (stack, dist, version)
        for stack, (dists, _, _) in stacks.items()
        for dist in dists
        if (version := version_of(dist)) is not None
    ]
    if not found:
        pins = ' or '.join(f'"{_pin(*spec)}"' for spec in stacks.values())
        return None, f'{module} is not installed: pip install {pins}'
    if len(found) > 1:
        names = ', '.join(f'{dist} {version}' for _, dist, version in found)
        return None, (
            f'{module} is installed by several distributions ({names}); '
            f'they overwrite each other\'s "{module}" package: pip '
            'uninstall all of them, then install one'
        )
    stack, dist, version = found[0]
    dists, low, high = stacks[stack]
    if not _digits(low) <= _digits(version) < _digits(high):
        return None, (
            f'{dist} {version} is not supported by mmssl {__version__}: '
            f'pip install "{_pin(dists, low, high)}"'
        )
    return stack, None


def _check_torch(version_of: Callable[[str], str | None]) -> list[str]:
    """Problems with torch and torchvision, each naming the fix."""
    pair = ' '.join(f'"{dist}>={low}"' for dist, low in _TORCH_MIN.items())
    problems = []
    for dist, low in _TORCH_MIN.items():
        version = version_of(dist)
        if version is None:
            problems.append(
                f'{dist} is not installed: pip install {pair} '
                '(the CPU build: docs/en/get_started.md)'
            )
        elif _digits(version) < _digits(low):
            problems.append(
                f'{dist} {version} is not supported by mmssl {__version__} '
                f'(needs >={low}): pip install --upgrade {pair}'
            )
    return problems


def check_dependencies(
    version_of: Callable[[str], str | None] | None = None,
) -> str:
    """Check torch, torchvision, mmengine, mmcv and mmpretrain; name the
    fix when one is off.

    torch and torchvision must be at least the floors of
    ``requirements/runtime.txt``. mmengine, mmcv and mmpretrain must each
    be installed once, in the supported range of its stack, and all three
    from the same stack (OpenMMLab releases or OneDL forks).

    Args:
        version_of (Callable, optional): Maps a distribution name to its
            installed version or None. Defaults to reading the installed
            package metadata.

    Returns:
        str: The stack in use, ``'openmmlab'`` or ``'onedl'``.

    Raises:
        ImportError: naming each problem and the ``pip`` command that fixes
            it.
    """
    version_of = version_of or _installed_version
    problems, stack_of = _check_torch(version_of), {}
    for module in _REQUIRED:
        stack, problem = _check_module(module, version_of)
        if problem:
            problems.append(problem)
        else:
            stack_of[module] = stack
    if not problems and len(set(stack_of.values())) > 1:
        mixed = ', '.join(
            f'{module} from {stack}' for module, stack in stack_of.items()
        )
        problems.append(
            f'mixed stacks ({mixed}): install all three from one, '
            'requirements/mminstall.txt (openmmlab) or '
            'requirements/mminstall-onedl.txt (onedl)'
        )
    if problems:
        raise ImportError(
            'mmssl found incompatible dependencies:\n  '
            + '\n  '.join(problems)
            + '\nFrom a checkout, `pip install -e .` installs mmssl with '
            'the supported versions (the tools import the installed mmssl).'
        )
    return next(iter(stack_of.values()))


check_dependencies()

# mmcv-lite has no compiled ops; mmcv warns about that on every import even
# though mmssl never uses them.
warnings.filterwarnings(
    'ignore', message='Fail to import ``MultiScaleDeformableAttention``'
)

__all__ = ['__version__', 'version_info', 'check_dependencies']
