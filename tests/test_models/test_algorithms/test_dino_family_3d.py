"""The DINO family on volumes (B, C, D, H, W): the loss of one step
against an independent computation, and 3D block masks in crop order."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mmssl.models.algorithms.dino_parts import global_masks
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

pytest.importorskip('monai')
register_all_modules()

_K = 16  # prototypes
_VIT = dict(
    type='VisionTransformer3D',
    arch=dict(
        embed_dims=16, num_layers=1, num_heads=2, feedforward_channels=32
    ),
    img_size=8,
    patch_size=4,
    out_type='cls_token',
    init_cfg=[dict(type='Xavier', layer='Linear', distribution='uniform')],
)
_HEAD = dict(
    type='DINOHead',
    in_channels='auto',
    n_prototypes=_K,
    hidden_channels=32,
    bottleneck_channels=8,
)


def _model(koleo_weight: float):
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='DINOFamily',
            backbone=_VIT,
            head=_HEAD,
            terms=dict(
                dino_cls=dict(type='DINOLoss', out_dim=_K),
                koleo=dict(type='KoLeoLoss', weight=koleo_weight),
            ),
            teacher_temp=0.05,
        )
    )
    model.init_weights()
    with torch.no_grad():  # a teacher that differs from the student
        for p in model.teacher.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def _dino_ce(student, teacher, temp):
    """DINO's CE, written out: mean over (teacher view t, student view s)
    pairs with s != t of mean_b -sum_k q_t log p_s; centre 0 (first step)."""
    loss, pairs = 0.0, 0
    for t in range(len(teacher)):
        q = torch.softmax(teacher[t] / temp, dim=-1)
        for s in range(len(student)):
            if s == t:
                continue
            logp = torch.log_softmax(student[s] / 0.1, dim=-1)
            loss = loss + (-(q * logp).sum(-1)).mean()
            pairs += 1
    return loss / pairs


def _koleo(x):
    x = F.normalize(x, dim=-1)
    dist = torch.cdist(x, x)
    dist.fill_diagonal_(float('inf'))
    return -torch.log(dist.min(dim=1).values + 1e-8).mean()


def test_dino_family_loss_on_volumes_matches_independent():
    """2 global 8^3 + 2 local 4^3 crops of 3 volumes: loss_dino_cls is
    DINO's CE of the heads' outputs for the (student, teacher) CLS
    tokens, and loss_koleo KoLeo of the student's global CLS tokens,
    summed over the 2 global crops."""
    model = _model(koleo_weight=0.5)
    g = [torch.randn(3, 1, 8, 8, 8) for _ in range(2)]
    loc = [torch.randn(3, 1, 4, 4, 4) for _ in range(2)]
    losses = model.loss(g + loc, [None] * 3)
    assert set(losses) == {'loss_dino_cls', 'loss_koleo'} | DINO_LOGGED

    with torch.no_grad():
        t_cls = [model.teacher['backbone'](x)[-1] for x in g]  # (B, C)
        t_out = [model.teacher['head'](c) for c in t_cls]
        s_cls = [model.backbone(x)[-1] for x in g + loc]
        s_out = [model.head(c) for c in s_cls]
        dino = _dino_ce(s_out, t_out, 0.05)
        koleo = 0.5 * (_koleo(s_cls[0]) + _koleo(s_cls[1]))
    torch.testing.assert_close(losses['loss_dino_cls'].detach(), dino)
    torch.testing.assert_close(losses['loss_koleo'].detach(), koleo)


def test_dino_family_on_volumes_trains_backbone():
    """The loss of 5-D views reaches the 3D patch embedding."""
    model = _model(koleo_weight=1.0)
    views = [torch.randn(4, 1, 8, 8, 8) for _ in range(2)]
    sum(model.loss(views, [None] * 4).values()).backward()
    grad = model.backbone.patch_embed.projection.weight.grad
    assert grad is not None and grad.abs().sum() > 0
    for p in model.teacher.parameters():
        assert p.grad is None


def test_global_masks_of_3d_grids_are_crop_major():
    """Masks (G, d, h, w) per volume, as BlockwiseMaskGenerator3D writes
    them, become (G*B, d*h*w) rows in the order of the concatenated
    global crops: crop 0 of every volume, then crop 1."""
    from mmpretrain.structures import DataSample

    rng = np.random.default_rng(0)
    masks = [rng.random((2, 2, 3, 4)) < 0.5 for _ in range(3)]  # B = 3
    samples = []
    for m in masks:
        sample = DataSample()
        sample.set_field(m, 'mask', field_type='metainfo')
        samples.append(sample)
    out = global_masks(samples, 2, 'cpu')
    assert out.shape == (6, 24) and out.dtype == torch.bool
    for g in range(2):
        for b in range(3):
            row = torch.from_numpy(masks[b][g].reshape(-1))
            assert torch.equal(out[g * 3 + b], row)


def test_mask_token_gets_no_gradient_without_a_masking_term():
    """Without ibot_patch no view is masked: the mask token gets no
    gradient, but stays a trainable parameter, so the optimizer's groups
    (and the optimizer state of older checkpoints) keep their shape."""
    model = _model(koleo_weight=1.0)
    token = model.backbone.mask_token
    assert token.requires_grad
    views = [torch.randn(4, 1, 8, 8, 8) for _ in range(2)]
    sum(model.loss(views, [None] * 4).values()).backward()
    assert token.grad is None or not token.grad.any()
