"""PretrainedInitHook and the benchmark configs that use it."""

import glob
import os.path as osp
from types import SimpleNamespace

import pytest
import torch

from mmssl.config import load_config
from mmssl.engine.hooks import PretrainedInitHook
from mmssl.registry import MODELS

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
# frozen-feature benchmarks (finetune/ trains everything; mmsegmentation/
# and mmdetection/ are the other toolboxes' configs)
BENCH = sorted(
    p
    for d in ('knn', 'linear_probe')
    for p in glob.glob(osp.join(ROOT, 'configs', 'benchmarks', d, '*.py'))
)


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
    runner.model.neck.register_buffer('w', torch.randn(3))
    neck_before = runner.model.neck.state_dict()['w'].clone()
    hook.before_test(runner)
    assert torch.equal(
        runner.model.backbone.state_dict()[key], source.state_dict()[key]
    )
    # modules without a Pretrained init_cfg are left alone
    assert torch.equal(runner.model.neck.state_dict()['w'], neck_before)
    # kNN features are the pooled backbone output of the loaded weights
    x = torch.randn(2, 3, 32, 32)
    source.eval()
    runner.model.eval()
    with torch.no_grad():
        feats = runner.model(x, mode='tensor')[-1]  # neck: tuple
        expected = source(x)[-1].mean(dim=(2, 3))
    assert feats.shape == (2, 128)
    assert torch.allclose(feats, expected, atol=1e-5)
