"""What ``pip install -e .`` asks for: one OpenCV package, not two.

opencv-python, opencv-python-headless and the contrib builds are
alternatives that install the same ``cv2`` folder. mmengine and mmcv-lite
require ``opencv-python``; if mmssl asked for another variant, pip would
install both (about 0.2 GB more, and removing either breaks ``cv2``).
"""

import ast
import importlib.metadata as metadata
import os.path as osp
import re

import pytest

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
OPENCV = {
    'opencv-python',
    'opencv-python-headless',
    'opencv-contrib-python',
    'opencv-contrib-python-headless',
}


def _names(lines) -> set:
    """Distribution names of requirement lines (comments, options out)."""
    out = set()
    for line in lines:
        line = line.split('#')[0].strip()
        if line and not line.startswith('-'):
            name = re.match(r'[A-Za-z0-9._-]+', line).group(0)
            out.add(name.lower().replace('_', '-'))
    return out


def _read(rel: str) -> list:
    lines = []
    with open(osp.join(ROOT, rel), encoding='utf-8') as f:
        for line in f:
            if line.startswith('-r '):
                lines += _read(line[3:].strip())
            else:
                lines.append(line)
    return lines


def _setup_files() -> list:
    """The requirement files setup.py reads (``parse_requirements('x')``)."""
    tree = ast.parse(open(osp.join(ROOT, 'setup.py')).read())
    return sorted(
        f'requirements/{node.args[0].value}.txt'
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, 'id', '') == 'parse_requirements'
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )


def test_setup_reads_the_requirement_files():
    files = _setup_files()
    assert 'requirements/runtime.txt' in files
    assert 'requirements/mminstall.txt' in files


@pytest.mark.parametrize(
    'rel', ['requirements.txt'] + _setup_files(), ids=lambda r: r
)
def test_at_most_one_opencv_variant(rel):
    variants = _names(_read(rel)) & OPENCV
    assert len(variants) <= 1, f'{rel} asks for {sorted(variants)}'


def test_one_opencv_for_the_whole_install():
    wanted = set()
    for rel in _setup_files() + ['requirements.txt']:
        wanted |= _names(_read(rel)) & OPENCV
    assert wanted == {'opencv-python'}, sorted(wanted)


@pytest.mark.parametrize('dist', ['mmengine', 'mmcv-lite'])
def test_same_variant_as_the_mm_stack(dist):
    try:
        requires = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        pytest.skip(f'{dist} is not installed')
    theirs = _names(r.split(';')[0] for r in requires) & OPENCV
    ours = _names(_read('requirements/runtime.txt')) & OPENCV
    assert theirs <= ours, (dist, theirs, ours)


def test_min_versions_script_finds_one_floor_per_package():
    """.dev_scripts/min_versions.sh pins each of its PACKAGES to the one
    ``name>=X`` line of the files setup.py reads; a package without one
    (or with two) would leave it unpinned or break the script."""
    with open(osp.join(ROOT, '.dev_scripts', 'min_versions.sh')) as f:
        script = f.read()
    packages = re.search(r"^PACKAGES='([^']+)'", script, re.M).group(1)
    assert packages.split() == [
        'torch',
        'torchvision',
        'mmengine',
        'mmcv-lite',
        'mmpretrain',
        'pytest',
    ]
    files = ['requirements/runtime.txt', 'requirements/mminstall.txt']
    files.append('requirements/tests.txt')
    assert all(rel in script for rel in files)
    lines = [line.strip() for rel in files for line in _read(rel)]
    for name in packages.split():
        floors = [x for x in lines if re.match(rf'{name}>=[0-9]', x)]
        assert len(floors) == 1, (name, floors)
