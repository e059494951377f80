"""Tools are thin scripts over the installed package (DESIGN.md): no
``sys.path`` edits, and no tool imports another tool."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / 'tools'


def _tool_files():
    for path in sorted(TOOLS.rglob('*.py')):
        yield path


def _sys_path_uses(tree: ast.AST) -> list:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == 'path'
        and isinstance(node.value, ast.Name)
        and node.value.id == 'sys'
    ]


def _imported_top_names(tree: ast.AST) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add((node.module or '').split('.')[0])
    return names


def test_no_tool_edits_sys_path():
    found = {
        path.relative_to(ROOT).as_posix(): lines
        for path in _tool_files()
        if (lines := _sys_path_uses(ast.parse(path.read_text())))
    }
    assert found == {}, (
        'tools edit sys.path (an editable install, pip install -e ., puts '
        f'mmssl on the path; shared code belongs in mmssl): {found}'
    )


def test_no_tool_imports_another_tool():
    stems = {p.stem for p in TOOLS.rglob('*.py')}
    found = {}
    for path in _tool_files():
        tree = ast.parse(path.read_text())
        others = (_imported_top_names(tree) & stems) - {path.stem}
        if others:
            found[path.relative_to(ROOT).as_posix()] = sorted(others)
    assert found == {}, f'tools import other tools: {found}'


def test_the_checks_see_an_edit_and_an_import():
    tree = ast.parse(
        'import sys\nimport zoo_table\nsys.path.insert(0, "x")\n'
        'def f():\n    from count_parameters import main\n'
    )
    assert _sys_path_uses(tree) == [3]
    assert {'zoo_table', 'count_parameters'} <= _imported_top_names(tree)
