"""PretrainedInitHook and the benchmark configs that use it."""

import glob
import os.path as osp
from types import SimpleNamespace

import pytest
import torch

from mmssl.engine.hooks import PretrainedInitHook
from mmssl.registry import MODELS
from mmssl.utils import load_config

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
BENCH = sorted(glob.glob(osp.join(ROOT, 'configs', 'benchmarks', '*', '*.py')))


def test_benchmark_configs_build():
    assert len(BENCH) >= 4
    for path in BENCH:
        cfg = load_config(path)
        assert cfg.model.backbone.init_cfg.type == 'Pretrained'
        assert dict(type='PretrainedInitHook') in cfg.custom_hooks
        if 'knn' in path:
            assert cfg.test_cfg.type == 'FeatureTestLoop'
            assert (cfg.test_evaluator.k, cfg.test_evaluator.temperature) == (
                20,
                0.07,
            )
        else:  # linear probe: only the head trains
            model = MODELS.build(cfg.model)
            trainable = [
                n for n, p in model.named_parameters() if p.requires_grad
            ]
            assert trainable and all(
                n.startswith('head.') for n in trainable
            ), trainable


def test_hook_loads_init_cfg_and_errors_without(tmp_path):
    cfg = load_config(
        osp.join(ROOT, 'configs/benchmarks/knn/knn_resnet18-w16_demo.py')
    )
    source = MODELS.build(cfg.model.backbone | dict(init_cfg=None))
    ckpt = str(tmp_path / 'bb.pth')
    torch.save(dict(state_dict=source.state_dict()), ckpt)

    runner = SimpleNamespace(model=MODELS.build(cfg.model))
    with pytest.raises(ValueError, match='init_cfg.checkpoint=PATH'):
        PretrainedInitHook().before_run(runner)

    cfg.model.backbone.init_cfg.checkpoint = ckpt
    cfg.model.backbone.init_cfg.prefix = None
    runner = SimpleNamespace(model=MODELS.build(cfg.model))
    hook = PretrainedInitHook()
    hook.before_run(runner)
    key = 'layer1.0.conv1.weight'
    assert not torch.equal(
        runner.model.backbone.state_dict()[key], source.state_dict()[key]
    )
    head_before = runner.model.head.fc.weight.clone()
    hook.before_test(runner)
    assert torch.equal(
        runner.model.backbone.state_dict()[key], source.state_dict()[key]
    )
    # modules without a Pretrained init_cfg are left alone
    assert torch.equal(runner.model.head.fc.weight, head_before)
