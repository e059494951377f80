"""Values of ``--cfg-options KEY=VALUE``, parsed as Python literals.

Numbers, ``None``, ``True``, lists, tuples, nested tuples, dicts (also
written ``dict(a=1)``) and quoted strings are parsed; anything else stays
a string. Unlike mmengine's ``DictAction`` this keeps spaces inside
strings and lets ``"'1'"`` stay the string ``'1'``; bare comma lists
(``a,b``) still become lists, as in mmengine. The key checks and the merge
are in :mod:`mmssl.config.options`.
"""

import argparse
import ast
from typing import Any, List

_MISSING = object()  # "not a literal" (None is a value)


def _split_top_level_commas(text: str) -> List[str]:
    """Split at commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in '\'"':
            quote = ch
        elif ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        elif ch == ',' and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _bare_word(word: str) -> Any:
    """``true``/``false``/``none``/``null`` (any case) or the word."""
    low = word.lower()
    if low in ('true', 'false'):
        return low == 'true'
    if low in ('none', 'null'):
        return None
    return word


def _is_dict_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == 'dict'
    )


def _node_value(node: ast.AST, in_dict_call: bool) -> Any:
    """Value of a literal AST node; ``dict(k=v)`` calls nest anywhere.

    Inside a ``dict(...)`` call a bare name is a word (``type=SGD`` gives
    ``'SGD'``, ``x=true`` gives True), as bare words are elsewhere.
    Nothing is evaluated: any other node raises ValueError.
    """
    containers = {ast.List: list, ast.Tuple: tuple, ast.Set: set}
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and in_dict_call:
        return _bare_word(node.id)
    if type(node) in containers:
        items = [_node_value(e, in_dict_call) for e in node.elts]
        return containers[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _node_value(k, in_dict_call): _node_value(v, in_dict_call)
            for k, v in zip(node.keys, node.values)
        }
    if (
        _is_dict_call(node)
        and not node.args
        and all(kw.arg is not None for kw in node.keywords)
    ):
        return {kw.arg: _node_value(kw.value, True) for kw in node.keywords}
    if isinstance(node, ast.UnaryOp) and isinstance(
        node.op, (ast.UAdd, ast.USub)
    ):
        value = _node_value(node.operand, in_dict_call)
        if isinstance(value, (int, float, complex)) and not isinstance(
            value, bool
        ):
            return -value if isinstance(node.op, ast.USub) else value
    raise ValueError(f'not a literal: {ast.dump(node)[:60]}')


def _literal_with_dict_calls(text: str) -> Any:
    """Parse a literal that holds ``dict(...)`` calls, nested anywhere.

    Returns:
        Any: The value, or ``_MISSING`` when ``text`` is no such literal
        (a bare word, a path, a bare comma list, ...).

    Raises:
        ValueError: for the user, when ``text`` is a ``dict(...)`` call
            holding anything but literals, bare words and containers.
    """
    try:
        node = ast.parse(text, mode='eval').body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _MISSING
    if isinstance(node, ast.Tuple) and not text.startswith('('):
        return _MISSING  # a bare comma list: a list, see parse_cfg_value
    try:
        return _node_value(node, in_dict_call=False)
    except (ValueError, RecursionError) as err:
        if _is_dict_call(node):
            raise ValueError(
                f'Cannot parse the --cfg-options value {text!r}: inside '
                'dict(...) only literals, bare words (type=SGD) and nested '
                'dict(...), [...] or (...) are allowed, as keywords (no '
                "**). Quote other strings: dict(data_root='data/x')."
            ) from err
        return _MISSING


def parse_cfg_value(text: str) -> Any:
    """Turn the text after ``=`` in ``KEY=VALUE`` into a Python value.

    Nothing is evaluated: Python literals are read with ``ast``, and
    ``dict(k=v, ...)`` calls may nest anywhere in them.

    Examples:
        >>> parse_cfg_value('0.1'), parse_cfg_value('None')
        (0.1, None)
        >>> parse_cfg_value('[(1, 2), (3, 4)]')
        [(1, 2), (3, 4)]
        >>> parse_cfg_value('[a, b]'), parse_cfg_value('a,b')
        (['a', 'b'], ['a', 'b'])
        >>> parse_cfg_value("'1'"), parse_cfg_value('my dir')
        ('1', 'my dir')
        >>> parse_cfg_value('dict(a=1, b=dict(c=[1, 2]), t=SGD)')
        {'a': 1, 'b': {'c': [1, 2]}, 't': 'SGD'}

    Args:
        text (str): The value as the shell passed it.

    Returns:
        Any: int, float, bool, None, list, tuple, dict or str.

    Raises:
        ValueError: for a ``dict(...)`` call holding anything else than
            literals, bare words and nested containers.
    """
    stripped = text.strip()
    if not stripped:
        return ''
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    value = _literal_with_dict_calls(stripped)
    if value is not _MISSING:
        return value
    is_tuple = stripped.startswith('(') and stripped.endswith(')')
    is_list = stripped.startswith('[') and stripped.endswith(']')
    if is_tuple or is_list:
        inner = stripped[1:-1]
    elif ',' in stripped and len(_split_top_level_commas(stripped)) > 1:
        inner = stripped
    else:
        return _bare_word(stripped)
    items = [
        parse_cfg_value(part)
        for part in _split_top_level_commas(inner)
        if part.strip()
    ]
    return tuple(items) if is_tuple else items


class CfgOptionsAction(argparse.Action):
    """argparse action: ``KEY=VALUE ...`` -> ``{KEY: parsed VALUE}``.

    A drop-in replacement for mmengine's ``DictAction`` using
    :func:`parse_cfg_value`. Repeated options accumulate.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        options = dict(getattr(namespace, self.dest, None) or {})
        for item in values or []:
            if '=' not in item:
                parser.error(
                    f'{option_string} expects KEY=VALUE pairs, got {item!r}'
                )
            key, value = item.split('=', 1)
            try:
                options[key.strip()] = parse_cfg_value(value)
            except ValueError as err:
                parser.error(f'{key.strip()}: {err}')
        setattr(namespace, self.dest, options)
