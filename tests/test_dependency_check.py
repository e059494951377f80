"""The mmengine/mmcv/mmpretrain check run by ``import mmssl``."""

import os.path as osp
import re
from importlib import metadata

import pytest

import mmssl

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))

TORCH = {'torch': '2.14.1+cu130', 'torchvision': '0.29.1'}
OPENMMLAB = {
    **TORCH,
    'mmengine': '0.10.7',
    'mmcv-lite': '2.2.0',
    'mmpretrain': '1.2.0',
}
ONEDL = {
    **TORCH,
    'onedl-mmengine': '0.10.12',
    'onedl-mmcv': '2.3.6',
    'onedl-mmpretrain': '1.3.6',
}


def _check(installed: dict) -> str:
    return mmssl.check_dependencies(version_of=installed.get)


def _problems(installed: dict) -> str:
    with pytest.raises(ImportError) as info:
        _check(installed)
    return str(info.value)


@pytest.mark.parametrize(
    'installed, stack',
    [
        (OPENMMLAB, 'openmmlab'),
        ({**OPENMMLAB, 'mmcv-lite': None, 'mmcv': '2.1.0'}, 'openmmlab'),
        (ONEDL, 'onedl'),
    ],
)
def test_either_stack_is_accepted(installed, stack):
    assert _check(installed) == stack


def test_the_installed_stack_is_found():
    stack = mmssl.check_dependencies()
    dist = {'openmmlab': 'mmengine', 'onedl': 'onedl-mmengine'}[stack]
    assert mmssl._installed_version(dist) == metadata.version(dist)
    assert mmssl._installed_version('no-such-distribution-xyz') is None


def test_missing_and_unsupported_name_the_fix():
    text = _problems({**TORCH, 'mmcv-lite': '0.1.0', 'mmpretrain': '1.2.0'})
    assert (
        'mmengine is not installed: pip install "mmengine>=0.10.0,<1.0.0" '
        'or "onedl-mmengine>=0.10.8,<1.0.0"'
    ) in text
    assert (
        'mmcv-lite 0.1.0 is not supported by mmssl '
        f'{mmssl.__version__}: pip install "mmcv-lite>=2.0.0,<2.4.0"'
    ) in text
    assert text.count('\n  ') == 2  # mmpretrain 1.2.0 is fine
    assert 'pip install -e .' in text  # what a checkout needs


@pytest.mark.parametrize(
    'dist, version, pin',
    [
        ('onedl-mmengine', '0.10.7', 'onedl-mmengine>=0.10.8,<1.0.0'),
        ('onedl-mmcv', '2.2.0', 'onedl-mmcv>=2.3.0,<2.4.0'),
        ('onedl-mmpretrain', '1.2.0', 'onedl-mmpretrain>=1.3.0,<1.4.0'),
        ('onedl-mmpretrain', '1.4.0', 'onedl-mmpretrain>=1.3.0,<1.4.0'),
    ],
)
def test_fork_versions_use_the_fork_range(dist, version, pin):
    text = _problems({**ONEDL, dist: version})
    assert f'{dist} {version} is not supported' in text
    assert f'pip install "{pin}"' in text
    assert text.count('not supported') == 1


def test_two_distributions_of_one_package_are_refused():
    text = _problems({**OPENMMLAB, 'onedl-mmengine': '0.10.12'})
    assert (
        'mmengine is installed by several distributions '
        '(mmengine 0.10.7, onedl-mmengine 0.10.12)'
    ) in text
    assert 'mmcv' not in text and 'mmpretrain' not in text


def test_mixed_stacks_are_refused():
    installed = {**ONEDL, 'onedl-mmpretrain': None, 'mmpretrain': '1.2.0'}
    text = _problems(installed)
    assert (
        'mixed stacks (mmengine from onedl, mmcv from onedl, '
        'mmpretrain from openmmlab)'
    ) in text
    assert 'requirements/mminstall-onedl.txt' in text


def test_torch_missing_or_too_old_names_the_pair():
    pair = '"torch>=2.6.0" "torchvision>=0.21.0"'
    text = _problems({**OPENMMLAB, 'torch': None})
    assert f'torch is not installed: pip install {pair}' in text
    assert 'docs/en/get_started.md' in text  # where the CPU build is
    assert text.count('\n  ') == 1  # torchvision 0.29.1 is fine
    text = _problems({**OPENMMLAB, 'torch': '2.5.1+cpu'})
    assert (
        f'torch 2.5.1+cpu is not supported by mmssl {mmssl.__version__} '
        f'(needs >=2.6.0): pip install --upgrade {pair}'
    ) in text
    text = _problems({**OPENMMLAB, 'torchvision': '0.20.1'})
    assert 'torchvision 0.20.1 is not supported' in text
    assert text.count('\n  ') == 1
    # the floors themselves, with local version labels, are accepted
    floor = {**OPENMMLAB, 'torch': '2.6.0+cpu', 'torchvision': '0.21.0'}
    assert _check(floor) == 'openmmlab'


def _floors(rel: str) -> dict:
    """``name>=X`` lines of a requirement file: {name: X}."""
    with open(osp.join(ROOT, rel)) as f:
        found = re.findall(r'^([A-Za-z0-9_.-]+)>=([0-9.]+)', f.read(), re.M)
    return dict(found)


def test_checked_ranges_are_the_requirement_files():
    """import mmssl checks the floors pip installs (setup.py reads these
    files), so a raised floor is raised in both places."""
    runtime = _floors('requirements/runtime.txt')
    for dist, low in mmssl._TORCH_MIN.items():
        assert mmssl._digits(runtime[dist]) == mmssl._digits(low), dist
    for rel, stack in [
        ('requirements/mminstall.txt', 'openmmlab'),
        ('requirements/mminstall-onedl.txt', 'onedl'),
    ]:
        floors = _floors(rel)
        for specs in mmssl._REQUIRED.values():
            dists, low, _ = specs[stack]
            assert floors[dists[0]] == low, (rel, dists[0])
