"""Every tool under tools/ reads ``--cfg-options`` with the one parser.

Each script that mentions ``--cfg-options`` (or ``cfg_options``,
``DictAction``) is imported, its argument
parser is caught when ``main`` (or ``parse_args``) asks it to parse, and
then a real command line, with every required argument filled in, is
parsed by it. Nested ``dict(...)``, lists and tuples must come out as the
same Python values from every tool.
"""

import argparse
import glob
import os.path as osp
import re

import pytest

from mmssl.config.values import CfgOptionsAction
from tests.support.tools import ROOT, load_tool

TOOLS = sorted(
    osp.relpath(p, osp.join(ROOT, 'tools'))
    for p in glob.glob(osp.join(ROOT, 'tools', '**', '*.py'), recursive=True)
    # a tool that takes the option itself (zoo_report.py only passes
    # --cfg-options on to the tools it runs)
    if re.search(
        r"add_argument\(\s*'--cfg-options'|add_cfg_options_arguments\(|"
        r'DictAction',
        open(p, encoding='utf-8').read(),
    )
)

OPTIONS = [
    'a=dict(b=1)',
    'model.c=dict(d=dict(e=[1, 2]), f=SGD)',
    'g=[1, 2]',
    'h=(3, 4)',
    'i=[(1, 2), (3, 4)]',
    "j='1'",
]
EXPECTED = {
    'a': {'b': 1},
    'model.c': {'d': {'e': [1, 2]}, 'f': 'SGD'},
    'g': [1, 2],
    'h': (3, 4),
    'i': [(1, 2), (3, 4)],
    'j': '1',
}


class _Caught(Exception):
    def __init__(self, parser):
        self.parser = parser


def _tool_parser(rel, monkeypatch) -> argparse.ArgumentParser:
    """The parser a tool builds, caught at its first ``parse_args``."""

    def catch(self, args=None, namespace=None):
        raise _Caught(self)

    module = load_tool(rel)
    monkeypatch.setattr(argparse.ArgumentParser, 'parse_args', catch)
    entry = getattr(module, 'parse_args', None) or module.main
    with pytest.raises(_Caught) as info:
        entry([])
    monkeypatch.undo()
    return info.value.parser


def _required_args(parser) -> list:
    """Dummy values for the positional and required arguments."""
    argv = []
    for action in parser._actions:
        if not action.option_strings:
            if action.nargs in (None, '+', 1):
                argv.append('x')
        elif action.required:
            argv += [action.option_strings[0], 'x']
    return argv


def test_every_cfg_options_tool_is_found():
    # the tools that take --cfg-options today; a new one joins by itself
    for rel in (
        'train.py',
        'test.py',
        'analysis_tools/visualize_tsne.py',
        'analysis_tools/visualize_attention.py',
        'analysis_tools/count_parameters.py',
        'analysis_tools/benchmark_pipeline.py',
        'analysis_tools/browse_dataset.py',
        'misc/mae_visualization.py',
        'misc/check_dataset.py',
        'misc/knn_eval.py',
    ):
        assert rel in TOOLS


@pytest.mark.parametrize('rel', TOOLS)
def test_tool_parses_cfg_options_like_train(rel, monkeypatch):
    parser = _tool_parser(rel, monkeypatch)
    action = parser._option_string_actions['--cfg-options']
    assert isinstance(action, CfgOptionsAction), (rel, type(action))
    args = parser.parse_args(
        _required_args(parser) + ['--cfg-options', *OPTIONS]
    )
    assert args.cfg_options == EXPECTED
    for key, value in EXPECTED.items():  # tuples stay tuples
        assert type(args.cfg_options[key]) is type(value)
    assert '--allow-new-keys' in parser._option_string_actions, rel


def test_tools_merge_like_train(capsys):
    """Typos stop a tool with a did-you-mean; dict values merge."""
    from tests.support.tools import tiny_config

    tool = load_tool('analysis_tools/count_parameters.py')
    cfg = tiny_config('simclr_tiny')
    with pytest.raises(SystemExit) as info:
        tool.main([cfg, '--cfg-options', 'model.neck.hid_chanels=8'])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert 'Did you mean `model.neck.hid_channels`' in err
    # merged into the neck (a replaced neck would have no type to build)
    small = tool.main(
        [cfg, '--cfg-options', 'model.neck=dict(hid_channels=8)']
    )
    assert small != tool.main([cfg])
