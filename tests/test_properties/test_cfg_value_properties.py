"""Properties of the ``--cfg-options`` value parser.

Every Python literal ``x`` round-trips: ``parse(repr(x))`` is ``x``, with
the same types all the way down (1, 1.0 and True are told apart). The
same holds when dicts with identifier keys are written as nested
``dict(k=v, ...)`` calls, and through the argparse action. Bare words
(paths, names, words with spaces) stay strings, and nothing is ever
evaluated.
"""

import argparse
import keyword
import math
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmssl.config.values import CfgOptionsAction, parse_cfg_value

# any code point, lone surrogates too
CHARS = st.characters()
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(CHARS, max_size=12)
)
HASHABLE = (
    st.none() | st.booleans() | st.integers() | st.text(CHARS, max_size=6)
)
# strings from explicit alphabets: ``from_regex`` and the default ``text``
# cost hypothesis seconds of codec scanning on a fresh checkout
_HEAD = string.ascii_letters + '_'
IDENTIFIERS = st.builds(
    str.__add__,
    st.sampled_from(_HEAD),
    st.text(_HEAD + string.digits, max_size=7),
).filter(lambda s: not keyword.iskeyword(s))


def _containers(children, keys):
    return (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(keys, children, max_size=4)
    )


LITERALS = st.recursive(
    SCALARS, lambda c: _containers(c, HASHABLE), max_leaves=16
)
KWARG_DICTS = st.recursive(
    SCALARS, lambda c: _containers(c, IDENTIFIERS), max_leaves=16
)


def same(a, b) -> bool:
    """Equal values of equal types, recursively, dict order included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items())
        )
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def as_dict_calls(value) -> str:
    """Python source of ``value`` with every dict written ``dict(k=v)``."""
    if isinstance(value, dict):
        inner = ', '.join(f'{k}={as_dict_calls(v)}' for k, v in value.items())
        return f'dict({inner})'
    if isinstance(value, list):
        return '[' + ', '.join(as_dict_calls(v) for v in value) + ']'
    if isinstance(value, tuple):
        items = [as_dict_calls(v) for v in value]
        return '(' + ', '.join(items) + (',)' if len(items) == 1 else ')')
    return repr(value)


@given(LITERALS)
def test_every_literal_round_trips(value):
    assert same(parse_cfg_value(repr(value)), value)


@given(KWARG_DICTS)
def test_nested_dict_calls_round_trip(value):
    text = as_dict_calls(value)
    assert same(parse_cfg_value(text), value), text


@given(key=IDENTIFIERS, value=KWARG_DICTS, spaced=st.booleans())
def test_action_round_trips(key, value, spaced):
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction)
    text = as_dict_calls(value) if spaced else repr(value)
    args = parser.parse_args(['--cfg-options', f'm.{key}={text}', 'x=1'])
    assert list(args.cfg_options) == [f'm.{key}', 'x']
    assert same(args.cfg_options[f'm.{key}'], value)


_PATH_CHARS = string.ascii_letters + string.digits + '_./-'
BARE_WORDS = st.builds(
    lambda head, tail, more: ' '.join([head + tail] + more),
    st.sampled_from(_HEAD + '/'),
    st.text(_PATH_CHARS, max_size=10),
    st.lists(st.text(_PATH_CHARS, min_size=1, max_size=6), max_size=2),
).filter(lambda s: s.lower() not in ('true', 'false', 'none', 'null'))


@given(BARE_WORDS)
def test_bare_words_stay_strings(word):
    """Paths, names and words with spaces are kept as typed."""
    assert same(parse_cfg_value(word), word)
    assert same(parse_cfg_value(f'  {word} '), word)


def test_nested_dict_example():
    assert same(
        parse_cfg_value('dict(a=1, b=dict(c=[1, 2]))'),
        {'a': 1, 'b': {'c': [1, 2]}},
    )
    assert same(
        parse_cfg_value(
            'dict(custom_keys=dict(bias=dict(decay_mult=0.0)), t=SGD)'
        ),
        {'custom_keys': {'bias': {'decay_mult': 0.0}}, 't': 'SGD'},
    )


@pytest.mark.parametrize(
    'text', ['dict(a=open({path!r}, "w"))', 'dict(**open({path!r}, "w"))']
)
def test_nothing_is_evaluated(tmp_path, text):
    """A value that would create a file if evaluated is refused, clearly."""
    path = tmp_path / 'created'
    with pytest.raises(ValueError, match=r'inside dict\(\.\.\.\) only'):
        parse_cfg_value(text.format(path=str(path)))
    assert not path.exists()
