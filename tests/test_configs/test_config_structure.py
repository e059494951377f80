"""How configs/ is put together, read from the files (fast, no build).

* ``runner_type`` and the unresolved-config guard come from one base,
  configs/_base_/ssl_runner.py, which every config inherits;
* run fractions are written as people write them ('5%', '1/300') and
  every one of them parses;
* a per-recipe base holds its one key and nothing is popped from it.
"""

import ast
import glob
import os.path as osp
import re

import pytest

from mmssl.config import load_config
from mmssl.config.run_length import parse_fraction

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = sorted(
    glob.glob(osp.join(ROOT, 'configs', '**', '*.py'), recursive=True)
)
SSL_RUNNER = osp.join(ROOT, 'configs', '_base_', 'ssl_runner.py')
#: Fields that may hold a run fraction (mmssl.config.run_length).
FRACTION_FIELD = re.compile(
    r'^(begin|end|T_max|milestones|interval|val_interval|\w+_epochs|\w+_iters)$'
)


def _assigned_names(tree: ast.AST) -> set:
    return {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _strings_under_fraction_fields(tree: ast.AST):
    """String constants given to a run-fraction keyword (also in lists,
    and as positional arguments of the recipe helpers)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and FRACTION_FIELD.match(
            node.arg or ''
        ):
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Constant) and isinstance(
                    sub.value, str
                ):
                    yield sub.value
        if isinstance(node, ast.Call):  # __hooks(..., '30%', ...)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(
                    arg.value, str
                ):
                    if arg.value.endswith('%') or '/' in arg.value:
                        yield arg.value


def test_runner_and_guard_are_set_in_one_base_only():
    setters = []
    for path in CONFIGS:
        names = _assigned_names(ast.parse(open(path).read()))
        text = open(path).read()
        if 'runner_type' in names or re.search(
            r"type='UnresolvedLogProcessor'", text
        ):
            setters.append(osp.relpath(path, ROOT))
    assert setters == ['configs/_base_/ssl_runner.py']


@pytest.mark.parametrize(
    'rel',
    [
        # an mmpretrain:: recipe lists ssl_runner.py beside its base
        'configs/mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py',
        # the others inherit it through default_runtime.py
        'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py',
    ],
)
def test_configs_get_the_runner_and_guard(rel):
    cfg = load_config(osp.join(ROOT, rel))
    assert cfg.runner_type == 'SSLRunner'
    assert cfg.log_processor.type == 'UnresolvedLogProcessor'


def test_run_fractions_read_as_written_and_parse():
    seen = []
    for path in CONFIGS:
        for value in _strings_under_fraction_fields(
            ast.parse(open(path).read())
        ):
            if not re.search(r'%|^\s*\d+\s*/\s*\d+\s*$', value):
                continue
            seen.append(value)
            assert parse_fraction(value) is not None, (path, value)
            # no float spelling such as '3.3333333333333335%' or '5.0%'
            assert not re.search(r'\d\.\d{4,}|\.0%', value), (path, value)
    assert '1/300' in seen and '5%' in seen


def test_per_recipe_bases_hold_one_key_and_are_not_popped():
    folders = [
        'configs/_base_/schedules/warmup_cosine',
        'configs/_base_/schedules/teacher_student_hooks',
        'configs/_base_/datasets/multicrop_224px',
    ]
    files = [f for d in folders for f in glob.glob(osp.join(ROOT, d, '*.py'))]
    assert len(files) >= 8
    for path in files:
        tree = ast.parse(open(path).read())
        names = _assigned_names(tree)
        assert len(names) == 1 and not next(iter(names)).startswith('_')
    for path in CONFIGS:
        for folder in folders:
            name = '_' + osp.basename(folder)
            for recipe in re.findall(
                rf"pop\('{name}'\)\['(\w+)'\]", open(path).read()
            ):
                # a recipe that has a file of its own is not popped
                assert not osp.isfile(
                    osp.join(ROOT, folder, recipe + '.py')
                ), (path, recipe)
