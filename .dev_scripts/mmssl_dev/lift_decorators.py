"""Rewrite ``@deco def f`` as ``def f_lifted`` + ``f = deco(f_lifted)``.

mutmut 3 does not mutate a function that carries any decorator other than
``@staticmethod`` or ``@classmethod``: the whole body is skipped. In mmssl
that hides the code that matters most (``@torch.no_grad()`` on
Sinkhorn-Knopp, the centre update, the teacher update; the context managers
of the checkpoint layer). Python defines the decorator syntax as exactly this
assignment, so the rewrite keeps behaviour; it only adds the name
``f_lifted`` next to ``f`` and changes the ``__name__`` that a
``functools.wraps`` decorator copies. mutmut then trampolines and mutates
``f_lifted`` like any other function.

Only decorators whose dotted name is in :data:`LIFTABLE` are lifted: a
registering decorator (``@MODELS.register_module()``) would register the
function under its new name. Nested functions are left alone (mutmut mutates
them as part of their enclosing function, except when they are decorated).
The rewrite is applied to the temporary copy only, never to the worktree.

Usage (a check on one file; prints the rewritten source)::

    python -m mmssl_dev.lift_decorators mmssl/models/losses/centering.py
"""

import sys

import libcst as cst

LIFTABLE = (
    'torch.no_grad',
    'torch.inference_mode',
    'torch.enable_grad',
    'no_grad',
    'contextlib.contextmanager',
    'contextmanager',
    'functools.lru_cache',
    'functools.cache',
    'lru_cache',
)
SUFFIX = '_lifted'


def dotted_name(expr: cst.BaseExpression) -> str:
    """``torch.no_grad`` for ``torch.no_grad()`` or ``torch.no_grad``."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return ''
    parts.append(expr.value)
    return '.'.join(reversed(parts))


class _Lifter(cst.CSTTransformer):
    """Lifts liftable decorators of module- and class-level functions."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # function nesting
        self.lifted: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ):
        self.depth -= 1
        name = updated.name.value
        decorators = updated.decorators
        if (
            self.depth > 0
            or not decorators
            or name.startswith('__')  # class-private names get mangled
            or not all(
                dotted_name(d.decorator) in LIFTABLE for d in decorators
            )
        ):
            return updated
        lifted = cst.Name(name + SUFFIX)
        value: cst.BaseExpression = lifted
        for deco in reversed(decorators):  # the innermost is applied first
            value = cst.Call(func=deco.decorator, args=[cst.Arg(value)])
        assign = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.Name(name))], value)]
        )
        self.lifted.append(name)
        return cst.FlattenSentinel(
            [updated.with_changes(name=lifted, decorators=[]), assign]
        )


def lift_source(source: str) -> tuple[str, list[str]]:
    """Return the rewritten source and the names of the lifted functions."""
    lifter = _Lifter()
    module = cst.parse_module(source).visit(lifter)
    return module.code, lifter.lifted


if __name__ == '__main__':
    for path in sys.argv[1:]:
        with open(path, encoding='utf-8') as f:
            code, names = lift_source(f.read())
        print(code)
        print(f'# lifted: {names}', file=sys.stderr)
