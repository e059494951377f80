"""forward_packed (multi-crop token packing) equals one forward per crop
group: outputs and gradients, with masks, registers, RoPE, stochastic
depth and activation checkpointing, for both ViT backbones."""

import pytest
import torch

from mmssl.models.backbones import DINOv3ViT, DINOVisionTransformer
from mmssl.models.layers.drop_path import GroupKeep, _kept_rows
from mmssl.models.layers.token_packing import (
    TokenGroups,
    group_masks,
    pack_tokens,
    unpack_tokens,
)
from mmssl.models.utils.activation_checkpoint import selective_cp_available
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

ARCH = dict(embed_dims=32, num_layers=3, num_heads=2, feedforward_channels=48)
SIZES = ((2, 32), (3, 16), (1, 24))  # (batch, side) of each crop group


def build(kind, drop=0.0, **kw):
    common = dict(
        arch=ARCH,
        patch_size=8,
        num_register_tokens=2,
        out_type='raw',
        out_indices=[0, 2],
        drop_path_rate=drop,
    )
    if kind == 'v2':
        model = DINOVisionTransformer(img_size=32, **common, **kw)
    else:
        model = DINOv3ViT(**common, **kw)
    torch.manual_seed(0)
    with torch.no_grad():  # every path contributes visibly
        for name, p in model.named_parameters():
            if 'gamma' in name:
                p.uniform_(0.5, 1.0)
            elif p.dim() > 1 or 'token' in name:
                p.normal_(0.0, 0.2)
    return model


def inputs():
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(b, 3, s, s, generator=gen) for b, s in SIZES]
    mask = torch.rand(2, 16, generator=gen) < 0.5  # group 0: 4x4 patches
    return xs, [mask, None, None]


def per_group(model, xs, masks, seeds=None):
    outs = []
    for g, (x, m) in enumerate(zip(xs, masks)):
        if seeds is not None:
            torch.manual_seed(seeds[g])
        outs.append(model(x, mask=m))
    return outs


def packed(model, xs, masks, seeds=None):
    gens = None
    if seeds is not None:
        gens = [torch.Generator().manual_seed(s) for s in seeds]
    return model.forward_packed(xs, masks, generators=gens)


def run(model, fn, xs, masks, seeds=None):
    """Outputs and parameter gradients of a fixed random readout."""
    model.zero_grad()
    outs = fn(model, xs, masks, seeds)
    gen = torch.Generator().manual_seed(2)
    loss = sum(
        (o * torch.randn(o.shape, generator=gen)).sum()
        for group in outs
        for o in group
    )
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    return [[o.detach() for o in group] for group in outs], grads


def assert_same(a, b):
    outs_a, grads_a = a
    outs_b, grads_b = b
    for group_a, group_b in zip(outs_a, outs_b, strict=True):
        assert len(group_a) == len(group_b) == 2
        for x, y in zip(group_a, group_b):
            torch.testing.assert_close(x, y, atol=1e-5, rtol=0)
    assert grads_a.keys() == grads_b.keys()
    for name, want in grads_a.items():
        # Weight gradients sum over all tokens, in another order when
        # packed: equal within 1e-5 of the gradient's own size.
        tol = 1e-5 * max(1.0, want.abs().max().item())
        err = (want - grads_b[name]).abs().max().item()
        assert err <= tol, f'{name}: {err} > {tol}'


@pytest.mark.parametrize(
    'kind,kw',
    [
        ('v2', {}),
        ('v3', {}),
        ('v3', dict(untie_cls_and_patch_norms=True)),
    ],
)
@pytest.mark.parametrize('mode', ['eval', 'train', 'drop_0.5', 'drop_0.05'])
def test_packed_equals_per_group(kind, kw, mode):
    # drop 0.05: most branches keep every sample (the unscaled-add path)
    drop = float(mode[5:]) if mode.startswith('drop') else 0.0
    if kind == 'v3' and drop:
        kw = dict(kw, rope_rescale_coords=None)  # RoPE draws global RNG
    model = build(kind, drop, **kw).train(mode != 'eval')
    xs, masks = inputs()
    seeds = [11, 12, 13] if drop else None
    torch.manual_seed(5)  # DINOv3 RoPE augmentation in 'train'
    want = run(model, per_group, xs, masks, seeds)
    torch.manual_seed(5)
    got = run(model, packed, xs, masks, seeds)
    assert [o.shape for o in got[0][1]] == [(3, 1 + 2 + 4, 32)] * 2
    assert_same(want, got)
    if drop == 0.5:  # stochastic depth really dropped something
        eval_outs = packed(model.eval(), xs, masks)
        assert not torch.allclose(eval_outs[0][1], got[0][0][1], atol=1e-3)


@pytest.mark.parametrize('mode', ['static', 'fixed', 'fixed_stochastic'])
@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_packed_fixed_count_modes_equal_per_group(kind, mode):
    # Groups of 2, 3 and 1 samples at rate 0.5: 'fixed' keeps 1, 1 and 1,
    # so one packed residual has the scales B/k = 2, 3 and 1.
    kw = dict(drop_path_mode=mode)
    if kind == 'v3':
        kw['rope_rescale_coords'] = None  # RoPE draws the global RNG
    model = build(kind, 0.5, **kw).train()
    xs, masks = inputs()
    want = run(model, per_group, xs, masks, [11, 12, 13])
    got = run(model, packed, xs, masks, [11, 12, 13])
    assert_same(want, got)
    eval_outs = packed(model.eval(), xs, masks)
    assert not torch.allclose(got[0][0][1], eval_outs[0][1])  # dropped


def test_packed_mixed_mode_stack_equals_per_group():
    # One 'static' block among others: every block draws its own samples
    # (no whole-stack static draw), the static one with packed rows.
    modes = ['static', 'bernoulli', 'static']
    cfgs = [dict(drop_path_mode=m) for m in modes]
    model = build('v2', 0.5, layer_cfgs=cfgs).train()
    assert [b.drop_path_mode for b in model.layers] == modes
    xs, masks = inputs()
    want = run(model, per_group, xs, masks, [11, 12, 13])
    got = run(model, packed, xs, masks, [11, 12, 13])
    assert_same(want, got)
    eval_outs = packed(model.eval(), xs, masks)
    assert not torch.allclose(got[0][0][1], eval_outs[0][1])  # dropped


@pytest.mark.parametrize('with_cp', [True, 'selective'])
@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_packed_checkpointing_reuses_drop_decisions(kind, with_cp):
    # Recomputation under with_cp (whole blocks or selective by op) must
    # not draw new keep decisions.
    if with_cp == 'selective' and not selective_cp_available():
        pytest.skip('torch lacks create_selective_checkpoint_contexts')
    xs, masks = inputs()
    kw = dict(rope_rescale_coords=None) if kind == 'v3' else {}
    plain = build(kind, 0.5, **kw).train()
    ckpt = build(kind, 0.5, with_cp=with_cp, **kw).train()
    ckpt.load_state_dict(plain.state_dict())
    assert_same(
        run(plain, packed, xs, masks, [3, 4, 5]),
        run(ckpt, packed, xs, masks, [3, 4, 5]),
    )


def test_pack_layout_and_kept_rows():
    a = torch.arange(2 * 3).view(2, 3, 1).float()  # 2 samples, 3 tokens
    b = 100 + torch.arange(3 * 2).view(3, 2, 1).float()  # 3 samples, 2 tok
    flat, groups = pack_tokens([a, b])
    assert groups == TokenGroups(((2, 3), (3, 2)))
    assert flat[:, 0].tolist() == [
        0,
        1,
        2,
        3,
        4,
        5,
        100,
        101,
        102,
        103,
        104,
        105,
    ]
    back = unpack_tokens(flat, groups)
    assert torch.equal(back[0], a) and torch.equal(back[1], b)
    cpu = torch.device('cpu')
    keep = [
        GroupKeep(torch.tensor([1]), 1, 2.0, cpu),
        GroupKeep(torch.tensor([0, 2]), 2, 1.5, cpu),
    ]
    rows, kept = _kept_rows(groups, keep)
    # sample 1 of group 0 (rows 3-5), samples 0 and 2 of group 1
    assert rows.tolist() == [3, 4, 5, 6, 7, 10, 11]
    assert kept == TokenGroups(((1, 3), (2, 2)))


def test_forward_packed_checks_masks():
    model = build('v2').eval()
    xs, _ = inputs()
    with pytest.raises(ValueError, match='one mask'):
        model.forward_packed(xs, [None])


@pytest.mark.parametrize('vit', ['DINOVisionTransformer', 'DINOv3ViT'])
def test_forward_packed_needs_one_mask_per_group(vit):
    xs = [torch.zeros(2, 3, 32, 32), torch.zeros(2, 3, 16, 16)]
    assert group_masks(xs, None) == [None, None]
    mask = torch.zeros(2, 4, 4, dtype=torch.bool)
    assert group_masks(xs, (mask, None))[0] is mask
    with pytest.raises(ValueError, match='got 2 groups and 1 masks'):
        group_masks(xs, [mask])
    with pytest.raises(ValueError, match='got 0 groups and 0 masks'):
        group_masks([], None)
    # both backbones refuse it the same way
    register_all_modules()
    arch = dict(embed_dims=32, num_layers=1, num_heads=2)
    model = MODELS.build(dict(type=vit, arch=arch, patch_size=8))
    with pytest.raises(ValueError, match='one mask \\(or None\\) per group'):
        model.forward_packed(xs, [None])
