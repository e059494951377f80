""".dev_scripts/benchmark_vs_reference.py over
mmssl_dev.speed_vs_reference: one mmssl row per (variant, drop-path
mode), each model built with its mode."""

import pytest
from torch import nn

from mmssl_dev import speed_vs_reference as svr
from tests.support.tools import load_dev_script

bvr = load_dev_script('benchmark_vs_reference.py')


def test_rows_and_names_per_drop_path_mode():
    args = bvr.parse_args(
        ['--reference-root', 'x', '--variants', 'plain', 'packed',
         '--drop-path-mode', 'static', 'bernoulli']
    )  # fmt: skip
    rows = svr.rows(args)
    assert rows == [
        ('plain', 'static'),
        ('packed', 'static'),
        ('plain', 'bernoulli'),
        ('packed', 'bernoulli'),
    ]
    assert [svr.name_of(*r) for r in rows] == [
        'mmssl',
        'mmssl+packed',
        'mmssl[bernoulli]',
        'mmssl+packed[bernoulli]',
    ]
    # by default the rows run as the DINO-family configs build the model
    assert bvr.parse_args(['--reference-root', 'x']).drop_path_mode == [
        'static'
    ]
    with pytest.raises(SystemExit):
        bvr.parse_args(['--reference-root', 'x', '--drop-path-mode', 'fix'])


def test_backbone_rows_use_their_mode(monkeypatch):
    built = {}

    def capture(model, xs, packed):
        mode = model.layers[-1].drop_path_mode
        built[mode] = model.layers[-1].drop_path_rate
        return lambda: None

    monkeypatch.setattr(svr, 'mmssl_backbone_fn', capture)
    args = bvr.parse_args(
        ['--reference-root', 'x', '--batch', '1',
         '--drop-path-mode', 'fixed', 'fixed_stochastic']
    )  # fmt: skip
    ref = dict(vit_small=lambda **kw: nn.Linear(1, 1))
    fns = svr.backbone_fns(ref, args)
    assert list(fns) == [
        'mmssl[fixed]',
        'mmssl[fixed_stochastic]',
        'reference',
    ]
    assert built == pytest.approx({'fixed': 0.4, 'fixed_stochastic': 0.4})


def test_arch_and_checkpointing_switches():
    import os.path as osp

    args = bvr.parse_args(
        ['--reference-root', 'x', '--arch', 'large', '--with-cp', 'selective']
    )  # fmt: skip
    assert svr.with_cp(args) == 'selective'
    assert svr.with_cp(bvr.parse_args(['--reference-root', 'x'])) is False
    for arch in ('small', 'large'):  # the mmssl side's recipe of each
        assert osp.isfile(svr.recipe_config(arch, bvr.CONFIGS))
    with pytest.raises(FileNotFoundError, match='ViT-S/14'):
        svr.recipe_config('small', osp.join(bvr.CONFIGS, 'nowhere'))
    with pytest.raises(SystemExit):
        bvr.parse_args(['--reference-root', 'x', '--arch', 'giant'])


def test_a_side_out_of_memory_leaves_the_others(capsys):
    import torch

    def oom():
        raise torch.OutOfMemoryError('no room')

    calls = []
    fns = dict(mmssl=lambda: calls.append(1), reference=oom)
    times = svr.interleave(fns, repeats=2, warmup=1)
    assert list(times) == ['mmssl'] and len(times['mmssl']) == 2
    assert len(calls) == 3
    svr.report('t', times, flops=2e12, peak=100.0)
    out = capsys.readouterr().out
    assert 'reference: out of memory' in out and 'mmssl: median' in out
    median = sum(times['mmssl']) / 2
    assert f'{2 / median:.3g} TFLOP/s, MFU {2 / median:.1f}%' in out


def test_default_mode_is_the_recipe_mode():
    from mmengine.config import Config

    for arch in ('small', 'large'):
        cfg = Config.fromfile(svr.recipe_config(arch, bvr.CONFIGS))
        assert cfg.model.backbone.drop_path_mode == svr.CONFIG_MODE
