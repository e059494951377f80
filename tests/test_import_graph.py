"""mmssl's subpackages import each other in one direction only.

The graph is read from the source with ``ast`` (imports inside functions
count too): a node is a subpackage or top-level module of mmssl
(``mmssl.config``, ``mmssl.registry``, ``mmssl.setup_env``, ...), an
edge an import from one to another. Nothing is exempt:
``register_all_modules`` (mmssl/setup_env.py) imports every package and
sits on top, next to ``apis``; below it, config finds classes through
the registries' lazy ``locations`` instead of importing them.
"""

import ast
import os.path as osp
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / 'mmssl'


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix('').parts)
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def _imported(path: Path) -> set:
    """Absolute names of the mmssl modules ``path`` imports."""
    name = _module_name(path)
    is_pkg = path.name == '__init__.py'
    package = name if is_pkg else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[: len(base) - node.level + 1]
                target = '.'.join(
                    base + ([node.module] if node.module else [])
                )
            else:
                target = node.module or ''
            found.update(f'{target}.{a.name}' for a in node.names)
    return {m for m in found if m == 'mmssl' or m.startswith('mmssl.')}


def _node(module: str) -> str:
    """``mmssl.config.keys`` -> ``config``; ``mmssl.registry`` ->
    ``registry``; ``mmssl`` -> ``mmssl``."""
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else 'mmssl'


def import_graph(package: Path = PACKAGE) -> dict:
    """``{node: {node it imports: [file, ...]}}`` over ``package``."""
    nodes = {p.stem for p in package.iterdir() if p.suffix == '.py'} | {
        p.name for p in package.iterdir() if (p / '__init__.py').is_file()
    }
    graph = {}
    for path in sorted(package.rglob('*.py')):
        rel = path.relative_to(ROOT).as_posix()
        src = _node(_module_name(path))
        for module in _imported(path):
            dst = _node(module)
            if dst != src and dst in nodes:
                graph.setdefault(src, {}).setdefault(dst, []).append(rel)
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected groups of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _explain(graph: dict, group: list) -> str:
    lines = []
    for a in group:
        for b in group:
            for f in graph.get(a, {}).get(b, [])[:3]:
                lines.append(f'  {a} -> {b}: {f}')
    return '\n'.join(lines)


def test_no_import_cycle_between_subpackages():
    graph = import_graph()
    found = cycles(graph)
    assert not found, 'import cycles:\n' + '\n'.join(
        _explain(graph, g) for g in found
    )


def test_registry_and_launch_import_nothing_of_mmssl_above():
    graph = import_graph()
    assert set(graph.get('registry', {})) == set()
    assert set(graph.get('launch', {})) == set()
    above_config = {'apis', 'setup_env', 'engine', 'evaluation', 'models'}
    assert not set(graph.get('config', {})) & above_config


def test_the_check_sees_a_cycle(tmp_path):
    pkg = tmp_path / 'mmssl'
    for sub, text in {
        'a': 'from mmssl.b import x\n',
        'b': 'def f():\n    from ..a import y\n',
        'c': 'import mmssl.a\n',
        'd': 'from mmssl.setup_env import register_all_modules\n',
        'setup_env': 'from mmssl import d\n',
    }.items():
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / '__init__.py').write_text(text)
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        graph = import_graph(pkg)
    finally:
        ROOT = old
    # no exemption: a package importing setup_env, the top, is a cycle too
    assert cycles(graph) == [['a', 'b'], ['d', 'setup_env']]
    assert osp.basename(graph['c']['a'][0]) == '__init__.py'
