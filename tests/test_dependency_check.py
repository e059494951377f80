"""The mmengine/mmcv/mmpretrain check run by ``import mmssl``."""

from importlib import metadata

import pytest

import mmssl

OPENMMLAB = {'mmengine': '0.10.7', 'mmcv-lite': '2.2.0', 'mmpretrain': '1.2.0'}
ONEDL = {
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
    text = _problems({'mmcv-lite': '0.1.0', 'mmpretrain': '1.2.0'})
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
