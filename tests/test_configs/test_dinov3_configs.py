"""The DINOv3 recipe configs (configs/dinov3): they build, chain their
three stages by ``model.warm_start`` and carry the DINOv3 defaults."""

import glob
import os.path as osp

import pytest
from mmengine.config import Config

from mmssl.engine.runner import build_runner

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CFG_DIR = osp.join(ROOT, 'configs', 'dinov3')
CONFIGS = sorted(
    osp.basename(p) for p in glob.glob(osp.join(CFG_DIR, 'dinov3_*.py'))
)
#: (stage, the stage it starts from), for both model sizes
CHAINS = [
    (f'dinov3_vit-{m}_{stage}_custom.py', f'dinov3_vit-{m}_{prev}custom.py')
    for m in ('s16_1xb64-100e', 'b16_4xb32-100e')
    for stage, prev in (('gram', ''), ('highres', 'gram_'))
]


def _cfg(name: str) -> Config:
    return Config.fromfile(osp.join(CFG_DIR, name))


def _pipeline(cfg: Config) -> list:
    dataset = cfg.train_dataloader.dataset
    return dataset.get('dataset', dataset).pipeline


def test_expected_configs_exist():
    for m in ('s16_1xb64-100e', 'b16_4xb32-100e'):
        for stage in ('', 'gram_', 'highres_'):
            assert f'dinov3_vit-{m}_{stage}custom.py' in CONFIGS
    assert 'dinov3_vit-s16_warmstart_custom.py' in CONFIGS
    assert 'dinov3_vit-tiny-p4_1xb64-10e_demo.py' in CONFIGS


@pytest.mark.parametrize(
    'name',
    [
        # a ViT-B (86M parameters) takes 5-8 s to initialise on 2 cores
        pytest.param(n, marks=pytest.mark.slow) if 'b16' in n else n
        for n in CONFIGS
    ],
)
def test_config_builds_a_runner(name, tmp_path):
    cfg = _cfg(name)
    cfg.work_dir = str(tmp_path)
    runner = build_runner(cfg)
    model = runner.model
    assert type(model).__name__ == 'DINOFamily'
    assert type(model.backbone).__name__ == 'DINOv3ViT'
    assert {'dino_cls', 'ibot_patch', 'koleo'} <= set(model.terms)
    has_gram = any(k in name for k in ('gram', 'highres', 'demo'))
    assert ('gram' in model.terms) == has_gram
    width = model.backbone.embed_dims
    assert model.head.mlp[0].in_features == width  # 'auto' head size


@pytest.mark.parametrize('name', CONFIGS)
def test_dinov3_defaults(name):
    cfg = _cfg(name)
    patch = cfg.model.backbone.patch_size
    crop = next(t for t in _pipeline(cfg) if 'MultiCrop' in t.type)
    assert crop.flip_prob == 0.0  # no horizontal flip
    for head in (cfg.model.head, cfg.model.patch_head):  # plain prototypes
        assert head.weight_norm is False and head.norm_last_layer is False
    assert not any(t.type == 'BlockwiseMaskGenerator' for t in _pipeline(cfg))
    collate = cfg.train_dataloader.collate_fn
    assert collate.type == 'mmssl.block_mask_collate'
    assert collate.patch_size == patch
    # constant lr after the warm-up: one LinearLR scheduler, nothing after
    assert [s.type for s in cfg.param_scheduler] == ['LinearLR']
    ema = next(h for h in cfg.custom_hooks if h.type == 'TeacherEMAHook')
    assert ema.momentum == ema.end_momentum  # constant teacher momentum


@pytest.mark.parametrize('stage,prev', CHAINS)
def test_stage_starts_from_previous_stage(stage, prev):
    cfg, prev_cfg = _cfg(stage), _cfg(prev)
    epochs = prev_cfg.train_cfg.max_epochs
    expected = f'work_dirs/{osp.splitext(prev)[0]}/epoch_{epochs}.pth'
    assert cfg.model.warm_start == dict(
        checkpoint=expected, format='mmssl_full'
    )
    assert cfg.get('load_from') is None and not cfg.get('resume', False)
    if '_gram_' not in prev:  # stage 1 starts from scratch
        assert 'warm_start' not in prev_cfg.model


def test_gram_stage_adds_the_gram_teacher():
    cfg = _cfg('dinov3_vit-s16_1xb64-100e_gram_custom.py')
    assert cfg.model.terms.gram.type == 'GramLoss'
    assert cfg.model.num_gram_crops == cfg.model.num_global_crops
    crop = next(t for t in _pipeline(cfg) if t.type == 'MultiCrop')
    assert crop.gram_size == 2 * crop.global_size
    hook = next(h for h in cfg.custom_hooks if h.type == 'GramTeacherHook')
    assert hook.first_update == 0 and hook.max_updates == 3


def test_highres_stage_mixes_resolutions():
    cfg = _cfg('dinov3_vit-s16_1xb64-100e_highres_custom.py')
    loader = cfg.train_dataloader
    assert loader.batch_sampler.type == 'MixedResolutionBatchSampler'
    assert loader.dataset.type == 'MixedResolutionDataset'
    crop = _pipeline(cfg)[1]
    assert crop.type == 'MixedResolutionMultiCrop'
    n = len(loader.batch_sampler.ratios)
    assert n == len(crop.global_sizes) == len(crop.local_sizes) >= 2
    assert len(set(crop.global_sizes)) == n  # several sizes
    assert all(s % 16 == 0 for s in crop.global_sizes + crop.local_sizes)


def test_warmstart_preset():
    cfg = _cfg('dinov3_vit-s16_warmstart_custom.py')
    assert cfg.model.warm_start.format == 'auto'
    assert cfg.model.warm_start.checkpoint.endswith('.pth')
    assert any(h.type == 'WarmStartHook' for h in cfg.custom_hooks)


def test_b16_presets_follow_the_sqrt_rule():
    for name in CONFIGS:
        if 'b16' not in name:
            continue
        cfg = _cfg(name)
        assert cfg.model.backbone.arch == 'base'
        total = cfg.auto_scale_lr.base_batch_size
        lr = cfg.optim_wrapper.optimizer.lr
        assert lr == pytest.approx(0.004 * (total / 1024) ** 0.5), name
