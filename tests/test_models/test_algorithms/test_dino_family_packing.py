"""DINOFamily(pack_crops=True): one packed backbone pass for all crop
sizes gives the same losses and gradients as one pass per size; the
teacher copy never drops paths."""

import copy

import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

K = 16
ARCH = dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=64)


def _cfg(kind, **kw):
    if kind == 'v2':
        vit = dict(type='DINOVisionTransformer', img_size=32)
    else:  # RoPE augmentation on: drawn per group in both paths
        vit = dict(type='DINOv3ViT', rope_rescale_coords=2.0)
    vit.update(arch=ARCH, patch_size=8, out_type='raw', num_register_tokens=1)
    head = dict(
        type='DINOHead',
        in_channels=32,
        n_prototypes=K,
        hidden_channels=32,
        bottleneck_channels=8,
    )
    terms = dict(
        dino_cls=dict(type='DINOLoss', out_dim=K),
        ibot_patch=dict(type='iBOTPatchLoss', out_dim=K),
        koleo=dict(type='KoLeoLoss', weight=0.1),
    )
    return dict(type='DINOFamily', backbone=vit, head=head, terms=terms, **kw)


def _batch(batch=2):
    gen = torch.Generator().manual_seed(0)
    sides = [32, 32, 16, 16, 24]  # 2 global crops, 2 local sizes
    views = [torch.randn(batch, 3, s, s, generator=gen) for s in sides]
    samples = []
    for _ in range(batch):
        mask = torch.rand(2, 4, 4, generator=gen) < 0.4
        samples.append(DataSample().set_mask(mask))
    return views, samples


def _step(model, views, samples):
    model.zero_grad()
    torch.manual_seed(3)
    losses = model.loss(views, samples)
    sum(losses.values()).backward()
    grads = {
        n: p.grad.clone()
        for n, p in model.named_parameters()
        if p.grad is not None
    }
    return {k: v.detach() for k, v in losses.items()}, grads


@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_packed_step_equals_per_size_step(kind):
    torch.manual_seed(0)
    plain = MODELS.build(_cfg(kind)).train()
    packed = MODELS.build(_cfg(kind, pack_crops=True)).train()
    packed.load_state_dict(plain.state_dict())
    views, samples = _batch()
    want_loss, want_grad = _step(plain, views, samples)
    got_loss, got_grad = _step(packed, views, samples)
    assert (
        set(want_loss)
        == {'loss_dino_cls', 'loss_ibot_patch', 'loss_koleo'} | DINO_LOGGED
    )
    for key, value in want_loss.items():
        torch.testing.assert_close(got_loss[key], value, atol=1e-5, rtol=0)
    assert want_grad.keys() == got_grad.keys()
    assert any(n.startswith('backbone.layers') for n in want_grad)
    for name, want in want_grad.items():
        tol = 1e-5 * max(1.0, want.abs().max().item())
        err = (want - got_grad[name]).abs().max().item()
        assert err <= tol, f'{name}: {err} > {tol}'


def test_packed_step_uses_one_backbone_pass():
    model = MODELS.build(_cfg('v2', pack_crops=True)).train()
    calls = []
    model.backbone.register_forward_hook(lambda *a: calls.append('forward'))
    original = model.backbone.forward_packed

    def spy(xs, masks=None, generators=None):
        calls.append([tuple(x.shape[-2:]) for x in xs])
        return original(xs, masks, generators)

    model.backbone.forward_packed = spy
    teacher = model.teacher['backbone']
    teacher_packed = teacher.forward_packed

    def teacher_spy(xs, masks=None, generators=None):
        calls.append(('teacher', [tuple(x.shape[-2:]) for x in xs]))
        return teacher_packed(xs, masks, generators)

    teacher.forward_packed = teacher_spy
    model.loss(*_batch())
    assert calls == [
        ('teacher', [(32, 32)]),  # the teacher packs too
        [(32, 32), (16, 16), (24, 24)],
    ]


def test_auto_packs_on_a_gpu_only_and_where_the_backbone_can():
    model = MODELS.build(_cfg('v2'))  # pack_crops='auto' by default
    assert model.pack_crops == 'auto'
    assert not model.packs(torch.zeros(1))  # CPU: one pass per size
    meta = torch.empty(1, device='meta')
    cuda_like = type('T', (), {'is_cuda': True})()
    assert model.packs(cuda_like) and not model.packs(meta)
    model.pack_crops = False
    assert not model.packs(cuda_like)
    cfg = _cfg('v2')
    cfg['backbone'] = dict(type='mmpretrain.ResNet', depth=18)
    cfg['terms'] = dict(dino_cls=cfg['terms']['dino_cls'])
    cfg['head']['in_channels'] = 512
    assert not MODELS.build(cfg).packs(cuda_like)  # ResNet cannot pack
    with pytest.raises(ValueError, match="True, False or 'auto', got 'yes'"):
        MODELS.build(_cfg('v2', pack_crops='yes'))


def test_pack_crops_needs_a_packing_backbone():
    cfg = _cfg('v2', pack_crops=True)
    cfg['backbone'] = dict(type='mmpretrain.ResNet', depth=18)
    cfg['terms'] = dict(dino_cls=cfg['terms']['dino_cls'])
    cfg['head']['in_channels'] = 512
    with pytest.raises(ValueError, match=r'forward_packed .*got ResNet\.$'):
        MODELS.build(cfg)


@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_teacher_copy_has_no_stochastic_depth(kind):
    cfg = _cfg(kind)
    cfg['backbone']['drop_path_rate'] = 0.5
    cfg['backbone']['rope_rescale_coords' if kind == 'v3' else 'img_size'] = (
        None if kind == 'v3' else 32
    )
    model = MODELS.build(cfg).train()
    teacher = model.teacher['backbone']
    x = torch.randn(4, 3, 32, 32)
    with torch.no_grad():
        first, second = teacher(x)[0], teacher(x)[0]
        evaluated = copy.deepcopy(teacher).eval()(x)[0]
    torch.testing.assert_close(first, second, atol=0, rtol=0)
    torch.testing.assert_close(first, evaluated, atol=1e-6, rtol=0)
