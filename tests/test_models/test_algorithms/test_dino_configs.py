"""The DINO / iBOT / DINOv2 configs parse, and the small ones build."""

import glob
import os.path as osp

import pytest
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper

from mmssl.registry import MODELS

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
CONFIGS = sorted(
    glob.glob(osp.join(ROOT, 'configs', 'dino*', '*.py'))
    + glob.glob(osp.join(ROOT, 'configs', 'ibot', '*.py'))
)


@pytest.mark.parametrize('path', CONFIGS, ids=osp.basename)
def test_config_parses(path):
    cfg = Config.fromfile(path)
    assert cfg.model.type in ('DINO', 'iBOT', 'DINOv2', 'DINOFamily')
    hooks = [h['type'] for h in cfg.custom_hooks]
    assert 'TeacherEMAHook' in hooks and 'TeacherTempWarmupHook' in hooks
    # the GPU speed presets (*_1xb64-100e_custom) are bf16 from the start
    assert cfg.optim_wrapper.type in (
        'NaNGuardOptimWrapper',
        'NaNGuardAmpOptimWrapper',
    )
    assert 'base_batch_size' in cfg.auto_scale_lr
    if cfg.model.type != 'DINO':
        assert cfg.model.backbone.out_type == 'raw'


@pytest.mark.parametrize(
    'name',
    [
        'dinov2/dinov2_vit-s14_8xb128-100e_in1k.py',
        'ibot/ibot_vit-s16_8xb128-100e_in1k.py',
    ],
)
def test_small_recipes_build(name):
    cfg = Config.fromfile(osp.join(ROOT, 'configs', name))
    model = MODELS.build(cfg.model)
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    # groups fused by equal settings (layer decay, weight decay, lr_mult)
    groups = [g for g in wrapper.param_groups if 'param_names' in g]
    by_name = {n: g for g in groups for n in g['param_names']}
    assert not any(n.startswith('teacher.') for n in by_name)
    n_student = sum(
        p.numel()
        for n, p in model.named_parameters()
        if not n.startswith('teacher.')
    )
    assert n_student > 21e6
    if 'dinov2' in name:
        lr = {n: g['lr'] for n, g in by_name.items()}
        # dinov2's decay rule: embeddings (cls, pos, mask token: all decay)
        # + patch embed x (weight, undecayed bias) + 12 blocks x 2 + top x
        # (no decay, decay) + the last layer's own group (its lr schedule)
        assert len(groups) == 30
        wd = {n: g['weight_decay'] for n, g in by_name.items()}
        assert wd['backbone.mask_token'] == 0.04
        assert wd['backbone.patch_embed.projection.bias'] == 0.0
        # 12 blocks, depths 0..13: embeddings 0.9**13, patch embed x0.2
        assert lr['backbone.cls_token'] == pytest.approx(0.004 * 0.9**13)
        assert lr['backbone.patch_embed.projection.weight'] == pytest.approx(
            0.004 * 0.9**13 * 0.2
        )
        assert lr['head.mlp.0.weight'] == pytest.approx(0.004)
