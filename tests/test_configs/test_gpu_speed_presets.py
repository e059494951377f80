"""The ViT-B/14 and ViT-L/14 speed presets (batch 64 per GPU, issue 27)
parse, build, and set what makes the step fast on a GPU."""

import math

import pytest
import torch
from mmengine.config import Config

from mmssl.engine.flops import dino_step_flops
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

PRESETS = {
    'configs/dinov2/dinov2_vit-b14_1xb64-100e_custom.py': ('base', False),
    'configs/dinov2/dinov2_vit-l14_1xb64-100e_custom.py': (
        'large',
        'selective',
    ),
}


@pytest.mark.parametrize('path', sorted(PRESETS))
def test_preset_builds_and_is_set_for_speed(path):
    register_all_modules()
    arch, with_cp = PRESETS[path]
    cfg = Config.fromfile(path)
    loader, model = cfg.train_dataloader, cfg.model
    assert loader.batch_size == 64 and loader.pin_memory
    assert 'block_mask_collate' in loader.collate_fn.type  # static buffer
    assert model.data_preprocessor.non_blocking
    assert (model.backbone.arch, model.backbone.with_cp) == (arch, with_cp)
    wrapper = cfg.optim_wrapper
    assert wrapper.type == 'NaNGuardAmpOptimWrapper'
    assert wrapper.dtype == 'bfloat16'
    assert wrapper.loss_scale == dict(enabled=False)
    assert wrapper.optimizer.lr == pytest.approx(0.004 * math.sqrt(64 / 1024))
    assert cfg.auto_scale_lr == dict(base_batch_size=64, rule='sqrt')
    runtime = cfg.default_hooks.runtime_info
    assert runtime == dict(type='BatchedRuntimeInfoHook', interval='logger')
    with torch.device('meta'):
        built = MODELS.build(cfg.model)
    assert built.backbone.embed_dims == (768 if arch == 'base' else 1024)
    gflop = dino_step_flops(cfg).total / 1e9  # 2x224 + 8x96 crops
    assert gflop == pytest.approx(1853 if arch == 'large' else 539, rel=0.01)
