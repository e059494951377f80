"""DINO / iBOT / DINOv2 algorithms with tiny ViTs (and a tiny ResNet)."""

import copy

import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

K = 16


def _vit(**kw):
    cfg = dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64
        ),
        img_size=32,
        patch_size=8,
        out_type='raw',
        drop_path_rate=0.1,
    )
    cfg.update(kw)
    return cfg


def _head():
    return dict(
        type='DINOHead',
        in_channels=32,
        n_prototypes=K,
        hidden_channels=32,
        bottleneck_channels=8,
    )


def _cfg(algo, **kw):
    cfg = dict(
        type=algo,
        backbone=_vit(),
        head=_head(),
        loss=dict(type='DINOLoss', out_dim=K),
        data_preprocessor=dict(
            type='SelfSupDataPreprocessor', mean=[0, 0, 0], std=[1, 1, 1]
        ),
    )
    if algo in ('iBOT', 'DINOv2'):
        cfg['ibot_loss'] = dict(type='iBOTPatchLoss', out_dim=K)
    cfg.update(kw)
    return cfg


def _views(batch=2, n_local=3):
    torch.manual_seed(0)
    return [torch.randn(batch, 3, 32, 32) for _ in range(2)] + [
        torch.randn(batch, 3, 16, 16) for _ in range(n_local)
    ]


def _samples(batch=2, masked=True):
    out = []
    for b in range(batch):
        mask = torch.zeros(2, 4, 4, dtype=torch.bool)
        if masked:
            mask[0, :2, :2] = True  # 4 patches of crop 0
            if b == 0:
                mask[1, 3] = True  # 4 patches of crop 1, image 0 only
        out.append(DataSample().set_mask(mask))
    return out


def _count_calls(module):
    calls = []
    module.register_forward_hook(lambda m, i, o: calls.append(i[0].shape))
    return calls


def test_dino_loss_and_tensor_modes():
    model = MODELS.build(_cfg('DINO'))
    calls = _count_calls(model.backbone)
    losses = model(_views(), None, mode='loss')
    assert set(losses) == {'loss_dino'} | DINO_LOGGED
    assert losses['loss_dino'].dim() == 0
    # one student pass for the 2 global crops, one for the 3 local ones
    assert calls == [(4, 3, 32, 32), (6, 3, 16, 16)]
    losses['loss_dino'].backward()
    assert model.backbone.cls_token.grad is not None
    assert all(p.grad is None for p in model.teacher.parameters())
    # teacher has no stochastic depth
    assert all(
        getattr(m, 'drop_prob', 0.0) == 0.0 for m in model.teacher.modules()
    )
    feats = model(torch.randn(3, 3, 32, 32), mode='tensor')
    assert feats.shape == (3, 32)
    # tensor mode uses the teacher backbone
    with torch.no_grad():
        model.teacher['backbone'].cls_token.add_(1.0)
    feats2 = model(torch.randn(3, 3, 32, 32), mode='tensor')
    assert not torch.allclose(feats, feats2)


def test_dino_loss_value_matches_manual_pipeline():
    model = MODELS.build(_cfg('DINO', backbone=_vit(drop_path_rate=0.0)))
    views = _views(n_local=2)
    loss = model.loss(views, None)['loss_dino']
    # recompute independently: each view separately, loops over pairs
    ref_loss = copy.deepcopy(model.dino_loss)
    ref_loss.center.zero_()
    with torch.no_grad():
        t = [
            model.teacher['head'](model.teacher['backbone'](v)[0][:, 0])
            for v in views[:2]
        ]
        s = [model.head(model.backbone(v)[0][:, 0]) for v in views]
    q = [torch.softmax(x / 0.04, -1) for x in t]
    total, n = 0.0, 0
    for i in range(2):
        for j in range(4):
            if i != j:
                total += (
                    -(q[i] * torch.log_softmax(s[j] / 0.1, -1)).sum(-1).mean()
                )
                n += 1
    assert loss.item() == pytest.approx((total / n).item(), rel=1e-4)


def test_update_teacher_ema():
    model = MODELS.build(_cfg('DINO'))
    with torch.no_grad():
        for p in model.backbone.parameters():
            p.add_(1.0)
    before = model.teacher['backbone'].cls_token.clone()
    student = model.backbone.cls_token.detach().clone()
    model.update_teacher(0.9)
    torch.testing.assert_close(
        model.teacher['backbone'].cls_token, 0.9 * before + 0.1 * student
    )


def test_init_weights_copies_pretrained_student_into_teacher(tmp_path):
    src = MODELS.build(_vit())
    ckpt = tmp_path / 'backbone.pth'
    torch.save(
        {
            'state_dict': {
                f'backbone.{k}': v for k, v in src.state_dict().items()
            }
        },
        ckpt,
    )
    model = MODELS.build(
        _cfg(
            'DINOv2',
            backbone=_vit(
                init_cfg=dict(
                    type='Pretrained', checkpoint=str(ckpt), prefix='backbone.'
                )
            ),
        )
    )
    model.init_weights()
    for name, val in src.state_dict().items():
        torch.testing.assert_close(model.backbone.state_dict()[name], val)
        torch.testing.assert_close(
            model.teacher['backbone'].state_dict()[name], val
        )


@pytest.mark.parametrize('separate', [False, True])
def test_ibot_losses_and_masks(separate):
    kw = dict(patch_head=_head()) if separate else {}
    model = MODELS.build(_cfg('iBOT', **kw))
    assert ('patch_head' in model.teacher) == separate
    seen = []
    orig = model.backbone.forward

    def spy(x, mask=None):
        seen.append(None if mask is None else mask.clone())
        return orig(x, mask=mask)

    model.backbone.forward = spy
    # the values of both terms: test_dino_family_values.py
    losses = model.loss(_views(), _samples())
    assert set(losses) == {'loss_dino', 'loss_ibot'} | DINO_LOGGED
    # global masks are crop-major (G*B, Hp*Wp): crop0-img0, crop0-img1, ...
    m = seen[0]
    assert m.shape == (4, 16)
    assert m.sum(1).tolist() == [4, 4, 4, 0]
    assert seen[1] is None  # local crops are never masked
    sum(losses.values()).backward()
    assert model.backbone.mask_token.grad is not None
    assert model.ibot_loss.center.abs().sum() > 0


def test_dinov2_passes_its_patch_head():
    model = MODELS.build(_cfg('DINOv2', patch_head=_head()))
    assert model.patch_head is not None
    assert 'patch_head' in model.teacher
    assert 'patch_head' not in MODELS.build(_cfg('DINOv2')).teacher


def test_ibot_requires_masks():
    model = MODELS.build(_cfg('iBOT'))
    with pytest.raises(ValueError, match='BlockwiseMaskGenerator'):
        model.loss(_views(), [DataSample(), DataSample()])


def test_dinov2_three_losses_and_batch_one():
    model = MODELS.build(
        _cfg(
            'DINOv2',
            loss=dict(type='DINOLoss', out_dim=K, centering='sinkhorn_knopp'),
            ibot_loss=dict(
                type='iBOTPatchLoss', out_dim=K, centering='sinkhorn_knopp'
            ),
            loss_weights=dict(koleo=0.5),
        )
    )
    # the values of the three terms: test_dino_family_values.py
    losses = model.loss(_views(), _samples())
    assert (
        set(losses) == {'loss_dino', 'loss_ibot', 'loss_koleo'} | DINO_LOGGED
    )
    assert model.loss_weights == dict(dino=1.0, ibot=1.0, koleo=0.5)
    assert all(torch.isfinite(v) for v in losses.values())
    one = model.loss(_views(batch=1), _samples(batch=1))
    assert one['loss_koleo'].item() == 0.0
    assert all(torch.isfinite(v) for v in one.values())
    with pytest.raises(ValueError, match='loss_weights'):
        MODELS.build(_cfg('DINOv2', loss_weights=dict(bogus=1.0)))


def test_dino_resnet_backbone():
    model = MODELS.build(
        _cfg(
            'DINO',
            backbone=dict(
                type='ResNet', depth=18, base_channels=8, stem_channels=8
            ),
            head=dict(
                type='DINOHead',
                in_channels=64,
                n_prototypes=K,
                hidden_channels=32,
                bottleneck_channels=8,
                use_bn=True,
            ),
        )
    )
    losses = model.loss(_views(), None)
    losses['loss_dino'].backward()
    assert model(torch.randn(2, 3, 32, 32), mode='tensor').shape == (2, 64)


def test_dino_local_weight_scales_the_local_pairs():
    """``loss_weights.dino_local`` reaches the DINO CE: pairs with a local
    student view count ``dino_local`` times, over the same pair count."""
    model = MODELS.build(
        _cfg(
            'DINO',
            backbone=_vit(drop_path_rate=0.0),
            loss_weights=dict(dino_local=0.25),
        )
    )
    views = _views(n_local=2)
    loss = model.loss(views, None)['loss_dino']
    with torch.no_grad():
        t = [
            model.teacher['head'](model.teacher['backbone'](v)[0][:, 0])
            for v in views[:2]
        ]
        s = [model.head(model.backbone(v)[0][:, 0]) for v in views]
    total, n = 0.0, 0
    for i in range(2):
        q = torch.softmax(t[i].double() / 0.04, -1)
        for j in range(4):
            if i != j:
                log_p = torch.log_softmax(s[j].double() / 0.1, -1)
                ce = -(q * log_p).sum(-1).mean().item()
                total += ce * (0.25 if j >= 2 else 1.0)
                n += 1
    assert loss.item() == pytest.approx(total / n, rel=1e-4)


def test_crop_counts_are_checked():
    one = MODELS.build(_cfg('DINO', num_global_crops=1))
    assert (one.num_global_crops, one.num_gram_crops) == (1, 0)
    three = MODELS.build(_cfg('DINO', num_global_crops=3, num_gram_crops=3))
    assert (three.num_global_crops, three.num_gram_crops) == (3, 3)
    msg = '^num_global_crops < 1 or num_gram_crops not 0/G$'
    for kw in (dict(num_global_crops=0), dict(num_gram_crops=1)):
        with pytest.raises(ValueError, match=msg):
            MODELS.build(_cfg('DINO', **kw))
