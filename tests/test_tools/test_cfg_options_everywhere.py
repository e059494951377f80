"""Every tool under tools/ reads ``--cfg-options`` with the one parser.

Each script that mentions ``--cfg-options`` (or ``cfg_options``,
``DictAction``) is imported, its argument
parser is caught when ``main`` (or ``parse_args``) asks it to parse, and
then a real command line, with every required argument filled in, is
parsed by it. Nested ``dict(...)``, lists and tuples must come out as the
same Python values from every tool.
"""

import argparse
import ast
import glob
import importlib
import inspect
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


# --------------------------------------------------------------------------
# one way to declare the option, one loader
# --------------------------------------------------------------------------
#: Calls that load or merge a config by hand instead of ``load_config``.
BY_HAND = {'fromfile', 'merge_from_dict', 'merge_cfg_options'}


def _calls(tree: ast.AST) -> set:
    """Names of the functions and methods ``tree`` calls."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def _declares_cfg_options_by_hand(tree: ast.AST) -> bool:
    """Whether some ``add_argument`` call declares '--cfg-options'."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == 'add_argument'
        and any(
            isinstance(a, ast.Constant) and a.value == '--cfg-options'
            for a in node.args
        )
        for node in ast.walk(tree)
    )


def _mmssl_functions_called(tree: ast.AST) -> list:
    """The mmssl functions a tool imports by name and calls."""
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(
            'mmssl'
        ):
            for alias in node.names:
                imported[alias.asname or alias.name] = (
                    node.module,
                    alias.name,
                )
    called = _calls(tree)
    out = []
    for local, (module, name) in imported.items():
        if local in called:
            obj = getattr(importlib.import_module(module), name)
            if inspect.isfunction(obj):
                out.append(obj)
    return out


@pytest.mark.parametrize('rel', TOOLS)
def test_tool_declares_with_the_helper_and_loads_with_the_loader(rel):
    path = osp.join(ROOT, 'tools', rel)
    tree = ast.parse(open(path, encoding='utf-8').read())
    calls = _calls(tree)
    assert 'add_cfg_options_arguments' in calls, rel
    assert not _declares_cfg_options_by_hand(tree), rel
    assert not calls & BY_HAND, (rel, calls & BY_HAND)
    # the loader, called by the tool or by the mmssl function it hands
    # its arguments to (tools/train.py: prepare_train_cfg)
    if 'load_config' in calls:
        return
    helpers = _mmssl_functions_called(tree)
    assert any(
        'load_config' in _calls(ast.parse(inspect.getsource(f)))
        for f in helpers
    ), (rel, [f.__name__ for f in helpers])


def test_structural_check_sees_a_tool_that_loads_by_hand():
    """The check above fails on the pattern it forbids."""
    tree = ast.parse(
        'def main(args):\n'
        '    parser.add_argument("--cfg-options", nargs="+")\n'
        '    cfg = Config.fromfile(args.config)\n'
        '    cfg.merge_from_dict(args.cfg_options)\n'
    )
    assert _declares_cfg_options_by_hand(tree)
    assert _calls(tree) & BY_HAND == {'fromfile', 'merge_from_dict'}


def test_benchmark_train_bad_cfg_option_is_one_line(capsys):
    """A typo in --cfg-options stops benchmark_train.py at once: exit 2,
    one line naming the key and the nearest one, no traceback."""
    tool = load_tool('analysis_tools/benchmark_train.py')
    demo = osp.join(
        ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
    )
    with pytest.raises(SystemExit) as info:
        tool.main([demo, '--cfg-options', 'train_dataloader.batch_sise=2'])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith('error: ')
    assert '`train_dataloader.batch_sise`' in err[0]
    assert 'Did you mean `train_dataloader.batch_size`' in err[0]


def test_missing_config_names_the_nearest_in_any_tool(capsys):
    tool = load_tool('analysis_tools/count_parameters.py')
    with pytest.raises(SystemExit) as info:
        tool.main(['configs/simclr/simclr_resnet18-w16_1xb64-10e_dmeo.py'])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith('error: config file configs/simclr/') and (
        'did you mean configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'
        in err
    ), err
