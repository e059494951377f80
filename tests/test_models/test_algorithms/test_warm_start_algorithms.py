"""``model.warm_start`` on DINO / iBOT / DINOv2, and stage chaining."""

import pytest
import torch

from mmssl.checkpoint.layouts import mmssl_to_dinov2
from mmssl.checkpoint.warm_start import WarmStartError
from mmssl.registry import MODELS

K = 16


def _cfg(algo, **kw):
    cfg = dict(
        type=algo,
        backbone=dict(
            type='DINOVisionTransformer',
            arch=dict(embed_dims=32, num_layers=2, num_heads=2),
            img_size=32,
            patch_size=8,
            out_type='raw',
        ),
        head=dict(
            type='DINOHead',
            in_channels=32,
            n_prototypes=K,
            hidden_channels=32,
            bottleneck_channels=8,
        ),
        loss=dict(type='DINOLoss', out_dim=K),
    )
    if algo in ('iBOT', 'DINOv2'):
        cfg['ibot_loss'] = dict(type='iBOTPatchLoss', out_dim=K)
    cfg.update(kw)
    return cfg


def build(algo, seed, **kw):
    torch.manual_seed(seed)
    model = MODELS.build(_cfg(algo, **kw))
    model.init_weights()
    return model


def randomise(model, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.normal_()


def equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        torch.equal(sa[k], sb[k]) for k in sa
    )


@pytest.mark.parametrize('algo', ['DINO', 'iBOT', 'DINOv2'])
def test_backbone_in_student_and_teacher_heads_fresh(tmp_path, algo):
    src = build(algo, 0)
    randomise(src, 1)
    path = str(tmp_path / 'hub.pth')
    torch.save(mmssl_to_dinov2(src.backbone.state_dict()), path)
    model = build(algo, 2, warm_start=dict(checkpoint=path))
    fresh = build(algo, 2)  # same seed, no warm start
    assert equal(model.backbone, src.backbone)
    assert equal(model.teacher['backbone'], src.backbone)
    assert equal(model.head, fresh.head)
    assert equal(model.teacher['head'], fresh.head)
    assert not equal(model.head, src.head)


def test_chaining_loads_the_whole_previous_stage(tmp_path):
    prev = build('DINOv2', 0)
    randomise(prev, 1)  # student, teacher, heads and loss buffers differ
    path = str(tmp_path / 'stage1.pth')
    torch.save({'state_dict': prev.state_dict(), 'meta': {}}, path)
    model = build(
        'DINOv2', 2, warm_start=dict(checkpoint=path, format='mmssl_full')
    )
    assert equal(model, prev)
    assert not equal(model.backbone, model.teacher['backbone'])
    # 'auto' on the same file takes the teacher backbone only
    auto = build('DINOv2', 2, warm_start=dict(checkpoint=path))
    assert equal(auto.backbone, prev.teacher['backbone'])
    assert equal(auto.head, build('DINOv2', 2).head)


def test_chaining_refuses_a_checkpoint_of_another_model(tmp_path):
    other = build('DINO', 0, backbone=dict(type='ResNet', depth=18))
    path = str(tmp_path / 'resnet.pth')
    torch.save({'state_dict': other.state_dict()}, path)
    with pytest.raises(WarmStartError, match='student/teacher backbone'):
        build('DINO', 2, warm_start=dict(checkpoint=path, format='mmssl_full'))


@pytest.mark.slow
def test_warmstart_config_takes_a_hub_vit_s14_file(tmp_path):
    """The preset's backbone matches the released ViT-S/14 (518 px) layout."""
    import copy as _copy

    from torch import nn

    from mmssl.checkpoint.warm_start import apply_warm_start
    from mmssl.config import load_config

    cfg = load_config('configs/dinov2/dinov2_vit-s14_warmstart_custom.py')
    assert cfg.model.warm_start.head_iters == 1000
    assert dict(type='WarmStartHook') in cfg.custom_hooks
    hub_cfg = dict(cfg.model.backbone, img_size=518)  # hub files: 37 x 37
    hub = mmssl_to_dinov2(MODELS.build(hub_cfg).state_dict())
    path = str(tmp_path / 'dinov2_vits14_pretrain.pth')
    torch.save(hub, path)
    algo = nn.Module()
    algo.backbone = MODELS.build(cfg.model.backbone)
    algo.teacher = nn.ModuleDict(dict(backbone=_copy.deepcopy(algo.backbone)))
    warm = dict(cfg.model.warm_start, checkpoint=path)
    report = apply_warm_start(algo, warm)
    assert report.missing == report.unexpected == []
    assert len(report.matched) == len(hub) == 175  # 12 x 14 + 7
    assert algo.backbone.pos_embed.shape == (1, 257, 384)
