"""The installed package holds the product only (DESIGN.md): the wheel
built from this checkout has ``mmssl`` as its one top-level package (no
``tests``, no tools, no development scripts), and no module of mmssl
imports what only the development scripts need."""

import ast
import glob
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what a checkout holds that a build must not see or write into
SKIP = shutil.ignore_patterns(
    '.git',
    '__pycache__',
    '*.egg-info',
    'build',
    'dist',
    'work_dirs',
    'data',
    'mutants',
    '.gpu_wheels',
    '.gpu_ref',
)
#: imported by .dev_scripts only (libcst and mutmut are not declared in
#: any runtime requirement; tomllib needs Python 3.11, mmssl allows 3.10)
DEV_ONLY = {'libcst', 'mutmut', 'tomllib', 'mmssl_dev'}


def _copy_checkout(tree: Path) -> None:
    """Copy what a clone holds: git's tracked and not-ignored files (not
    a virtual environment of gigabytes such as .ci/venv), or, outside a
    git checkout, the tree less :data:`SKIP`."""
    git = shutil.which('git')
    if git is None or not (ROOT / '.git').exists():
        shutil.copytree(ROOT, tree, ignore=SKIP)
        return
    cmd = [git, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']
    listed = subprocess.run(
        cmd, cwd=ROOT, check=True, capture_output=True, timeout=60
    ).stdout.decode()
    for rel in filter(None, listed.split('\0')):
        src = ROOT / rel
        if src.is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, tree / rel)


def _top_level(wheel: str) -> set:
    with zipfile.ZipFile(wheel) as z:
        return {name.split('/')[0] for name in z.namelist()}


def test_wheel_holds_mmssl_only(tmp_path):
    pytest.importorskip('setuptools', reason='builds with setuptools')
    tree = tmp_path / 'tree'
    # a copy, so the build writes no build/ or egg-info into the checkout;
    # tests/ and .dev_scripts/ come along, as in a clone
    _copy_checkout(tree)
    out = tmp_path / 'out'
    cmd = [sys.executable, '-m', 'pip', 'wheel', '--no-deps']
    cmd += ['--no-build-isolation', '--no-index', '-q', '-w', str(out), '.']
    subprocess.run(cmd, cwd=tree, check=True, timeout=120)
    (wheel,) = glob.glob(str(out / 'mmssl-*.whl'))
    top = _top_level(wheel)
    info = {name for name in top if name.endswith('.dist-info')}
    assert len(info) == 1
    assert top - info == {'mmssl'}


def _imported_top_names(path: Path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add((node.module or '').split('.')[0])
    return names


def test_no_package_module_imports_development_only_code():
    found = {
        path.relative_to(ROOT).as_posix(): sorted(names)
        for path in sorted((ROOT / 'mmssl').rglob('*.py'))
        if (names := _imported_top_names(path) & DEV_ONLY)
    }
    assert found == {}, (
        'modules of the installed package import development-only code '
        f'(move them to .dev_scripts/): {found}'
    )


def test_the_import_check_sees_plain_and_from_imports(tmp_path):
    path = tmp_path / 'x.py'
    path.write_text('import tomllib\nfrom libcst import x\nfrom . import y\n')
    assert _imported_top_names(path) == {'tomllib', 'libcst'}
