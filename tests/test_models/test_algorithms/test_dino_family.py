"""DINOFamily: terms from config, the Gram term, its hooks, Gram crops."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmpretrain.structures import DataSample

from mmssl.engine.hooks import GramTeacherHook, LossWeightScheduleHook
from mmssl.registry import MODELS, TRANSFORMS

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

K = 16


def _cfg(algo='DINOFamily', gram=True, **kw):
    vit = dict(
        type='DINOVisionTransformer',
        arch=dict(
            embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64
        ),
        img_size=32,
        patch_size=8,
        out_type='raw',
        drop_path_rate=0.0,
    )
    head = dict(
        type='DINOHead',
        in_channels=32,
        n_prototypes=K,
        hidden_channels=32,
        bottleneck_channels=8,
    )
    cfg = dict(type=algo, backbone=vit, head=head)
    if algo == 'DINOFamily':
        cfg['terms'] = dict(
            dino_cls=dict(type='DINOLoss', out_dim=K),
            ibot_patch=dict(type='iBOTPatchLoss', out_dim=K),
            koleo=dict(type='KoLeoLoss', weight=0.1),
        )
        if gram:
            cfg['terms']['gram'] = dict(type='GramLoss', weight=0.5)
    else:
        cfg['loss'] = dict(type='DINOLoss', out_dim=K)
        cfg['ibot_loss'] = dict(type='iBOTPatchLoss', out_dim=K)
    cfg.update(kw)
    return cfg


def _views(batch=2, gram_size=None):
    gen = torch.Generator().manual_seed(0)
    views = [torch.randn(batch, 3, 32, 32, generator=gen) for _ in range(2)]
    views.append(torch.randn(batch, 3, 16, 16, generator=gen))
    if gram_size:
        views += [
            torch.randn(batch, 3, gram_size, gram_size, generator=gen)
            for _ in range(2)
        ]
    return views


def _samples(batch=2):
    out = []
    for b in range(batch):
        mask = torch.zeros(2, 4, 4, dtype=torch.bool)
        mask[0, :2, :2] = True
        mask[1, 3, b:] = True
        out.append(DataSample().set_mask(mask))
    return out


def _gram_loop(student, teacher):
    """Image-level Gram MSE of normalised features, float64 loops."""
    total, count = 0.0, 0
    for s_img, t_img in zip(student.tolist(), teacher.tolist()):
        s_img = [
            [x / math.sqrt(sum(y * y for y in v)) for x in v] for v in s_img
        ]
        t_img = [
            [x / math.sqrt(sum(y * y for y in v)) for x in v] for v in t_img
        ]
        for i in range(len(s_img)):
            for j in range(len(s_img)):
                s = sum(a * b for a, b in zip(s_img[i], s_img[j]))
                t = sum(a * b for a, b in zip(t_img[i], t_img[j]))
                total += (s - t) ** 2
                count += 1
    return total / count


def test_aliases_are_family_configs_with_the_same_values():
    torch.manual_seed(0)
    family = MODELS.build(_cfg(gram=False))
    torch.manual_seed(0)
    alias = MODELS.build(_cfg('DINOv2'))
    assert family.state_dict().keys() == alias.state_dict().keys()
    a = family.loss(_views(), _samples())
    b = alias.loss(_views(), _samples())
    assert (
        set(a)
        == {'loss_dino_cls', 'loss_ibot_patch', 'loss_koleo'} | DINO_LOGGED
    )
    assert set(b) == {'loss_dino', 'loss_ibot', 'loss_koleo'} | DINO_LOGGED
    for ka, kb in zip(sorted(a), sorted(b)):
        assert torch.equal(a[ka], b[kb]), (ka, kb)
    assert alias.loss_weights == dict(dino=1.0, ibot=1.0, koleo=0.1)
    with pytest.raises(ValueError, match='terms must include dino_cls'):
        MODELS.build(_cfg(terms=dict(koleo=dict(type='KoLeoLoss'))))


def test_gram_term_against_a_hand_computed_value():
    """Student patches of the masked global crops vs. the Gram teacher's
    patches of the 48x48 copies (6x6 grid), bicubic to 4x4."""
    torch.manual_seed(1)
    model = MODELS.build(_cfg(num_gram_crops=2))
    views, samples = _views(gram_size=48), _samples()
    before = model.loss(views, samples)['loss_gram']  # no snapshot yet
    assert before.item() == 0.0 and before.requires_grad
    model.update_teacher(0.0)  # teacher := student
    with torch.no_grad():  # move the teacher so that the snapshot matters
        for p in model.teacher['backbone'].parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.update_gram_teacher()
    assert int(model.gram_teacher_updates) == 1
    for p, q in zip(
        model.gram_teacher.parameters(),
        model.teacher['backbone'].parameters(),
    ):
        assert torch.equal(p, q)
    loss = model.loss(views, samples)['loss_gram']

    masks = torch.stack([s.mask for s in samples]).transpose(0, 1)
    masks = masks.reshape(4, 16)  # crop-major (G*B, P)
    with torch.no_grad():
        s_tok = model.backbone(torch.cat(views[:2]), mask=masks)[-1][:, 1:]
        t_tok = model.gram_teacher(torch.cat(views[3:]))[-1][:, 1:]
        t_grid = t_tok.transpose(1, 2).reshape(4, 32, 6, 6)
        t_small = F.interpolate(
            t_grid, size=(4, 4), mode='bicubic', align_corners=False
        )
        t_tok = t_small.flatten(2).transpose(1, 2)
    expected = 0.5 * _gram_loop(s_tok.double(), t_tok.double())
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()  # the gradient reaches the student only
    assert model.backbone.patch_embed.projection.weight.grad is not None
    assert all(p.grad is None for p in model.gram_teacher.parameters())


def test_gram_term_without_gram_crops_uses_the_global_crops():
    """num_gram_crops=0: the Gram teacher sees the global crops themselves
    (no masks without an iBOT term)."""
    torch.manual_seed(2)
    terms = dict(
        dino_cls=dict(type='DINOLoss', out_dim=K),
        gram=dict(type='GramLoss', weight=0.5),
    )
    model = MODELS.build(_cfg(terms=terms))
    views = _views()
    _perturb_and_snapshot(model)
    loss = model.loss(views, None)['loss_gram']
    with torch.no_grad():
        g = torch.cat(views[:2])
        s_tok = model.backbone(g)[-1][:, 1:]
        t_tok = model.gram_teacher(g)[-1][:, 1:]
    expected = 0.5 * _gram_loop(s_tok.double(), t_tok.double())
    assert expected > 1e-4
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def _perturb_and_snapshot(model):
    with torch.no_grad():  # move the teacher so that the snapshot matters
        for p in model.teacher['backbone'].parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.update_gram_teacher()


def test_gram_teacher_is_in_the_state_dict():
    model = MODELS.build(_cfg())
    model.update_gram_teacher()
    state = model.state_dict()
    assert int(state['gram_teacher_updates']) == 1
    assert any(k.startswith('gram_teacher.') for k in state)
    fresh = MODELS.build(_cfg())
    fresh.load_state_dict(state)
    assert int(fresh.gram_teacher_updates) == 1
    # the EMA update leaves the Gram teacher alone
    before = [p.clone() for p in fresh.gram_teacher.parameters()]
    with torch.no_grad():
        for p in fresh.backbone.parameters():
            p.add_(1.0)
    fresh.update_teacher(0.5)
    assert all(
        torch.equal(a, b)
        for a, b in zip(before, fresh.gram_teacher.parameters())
    )


def test_gram_teacher_hook_schedule():
    hook = GramTeacherHook(first_update=2, period=3, max_updates=3)
    done, due = 0, []
    for it in range(15):
        if hook.is_due(it, done):
            due.append(it)
            done += 1
    assert due == [2, 5, 8]
    once = GramTeacherHook(first_update=4)
    assert [it for it in range(8) if once.is_due(it, 0)] == [4, 5, 6, 7]
    assert not once.is_due(6, 1)  # one snapshot, taken at 4
    # a run that starts (load_from) past a due point without a snapshot
    # takes one at once, then follows the period
    periodic = GramTeacherHook(first_update=0, period=5)
    assert periodic.is_due(7, 0) and not periodic.is_due(7, 1)
    assert periodic.is_due(10, 1)
    with pytest.raises(ValueError, match='period'):
        GramTeacherHook(period=0)


def test_loss_weight_schedule_values():
    lin = LossWeightScheduleHook(
        'gram', start=0.0, end=2.0, begin=10, end_iter=0.5
    )
    assert [lin.value(i, 100) for i in (0, 10, 30, 50, 90)] == [
        0.0,
        0.0,
        1.0,
        2.0,
        2.0,
    ]
    cos = LossWeightScheduleHook('dino_local', 1.0, 0.5, mode='cosine')
    assert cos.value(25, 100) == pytest.approx(
        1.0 - 0.5 * (1 - math.cos(math.pi / 4)) / 2
    )


def _multicrop(**kw):
    return TRANSFORMS.build(
        dict(
            type='MultiCrop',
            num_global_crops=2,
            num_local_crops=2,
            global_size=32,
            local_size=16,
            **kw,
        )
    )


def test_multicrop_gram_copies_same_crop_at_high_resolution():
    img = np.tile(np.arange(128, dtype=np.uint8)[None, :, None], (96, 1, 3))
    plain = dict(
        color_jitter_prob=0.0,
        grayscale_prob=0.0,
        global_blur_prob=0.0,
        local_blur_prob=0.0,
        global_solarize_prob=0.0,
    )
    np.random.seed(0)
    ref = _multicrop(**plain).transform(dict(img=img))
    np.random.seed(0)
    out = _multicrop(gram_size=64, **plain).transform(dict(img=img))
    assert out['num_gram_crops'] == 2 and len(out['img']) == 6
    for a, b in zip(ref['img'], out['img'][:4]):  # same draws as before
        assert np.array_equal(a, b)
    for g in range(2):
        hi = out['img'][4 + g].astype(float)
        assert hi.shape == (64, 64, 3)
        small = hi.reshape(32, 2, 32, 2, 3).mean(axis=(1, 3))
        # the same region and flip: the x-gradient agrees within 2 levels
        assert np.abs(small - out['img'][g]).max() <= 2.0
