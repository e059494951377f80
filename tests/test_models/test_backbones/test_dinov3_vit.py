"""Tests of DINOv3ViT and its 2D RoPE (any input size, mask token, output
types, activation checkpointing, attention maps, layer depth, arches, the
DINO-family algorithms on top). Numerical equivalence with the released
model: tests/test_checkpoint/test_dinov3_layout.py."""

import math

import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.models.backbones import DINOv3ViT
from mmssl.models.layers.rope import RoPE2D, apply_rope, rope_periods
from mmssl.registry import MODELS

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

TINY = dict(embed_dims=32, num_layers=2, num_heads=2)


def tiny(**kwargs):
    cfg = dict(arch=TINY, patch_size=8, num_register_tokens=2)
    cfg.update(kwargs)
    model = DINOv3ViT(**cfg)
    model.init_weights()
    with torch.no_grad():  # every path contributes visibly
        for name, p in model.named_parameters():
            if 'gamma' in name:
                p.uniform_(0.5, 1.0)
        model.mask_token.normal_()
    return model


def test_rope_periods_and_angles():
    # head_dims 16 -> 4 periods 100 ** (4 i / 16)
    torch.testing.assert_close(
        rope_periods(16), torch.tensor([1.0, 100**0.25, 10.0, 100**0.75])
    )
    rope = RoPE2D(16).eval()
    sin, cos = rope(2, 3)
    assert sin.shape == cos.shape == (6, 16)
    # patch (row 1, col 2) of a 2x3 grid: y = 0.5, x = 2/3 in [-1, 1]
    y, x = 2 * 1.5 / 2 - 1, 2 * 2.5 / 3 - 1
    p = rope_periods(16).double()
    want = torch.cat([2 * math.pi * y / p, 2 * math.pi * x / p])
    want = torch.cat([want, want])  # second half repeats the first
    torch.testing.assert_close(sin[5].double(), want.sin(), atol=1e-6, rtol=0)
    torch.testing.assert_close(cos[5].double(), want.cos(), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match='multiple of 4'):
        RoPE2D(18)
    with pytest.raises(ValueError, match='normalize_coords'):
        RoPE2D(16, normalize_coords='bogus')


def test_rope_is_relative_and_spares_prefix_tokens():
    """<R(a) q, R(b) k> depends on a - b only; prefix tokens untouched."""
    torch.manual_seed(0)
    sin, cos = RoPE2D(16, normalize_coords='max').eval()(4, 4)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)
    Q = apply_rope(q.expand(1, 1, 16, 16), sin, cos)[0, 0]
    K = apply_rope(k.expand(1, 1, 16, 16), sin, cos)[0, 0]
    dots = Q @ K.T  # (16, 16), patches row-major on a 4x4 grid
    # (0,0)-(1,2) and (2,1)-(3,3) have the same offset
    torch.testing.assert_close(dots[0, 6], dots[9, 15], atol=1e-5, rtol=0)
    assert (dots[0, 6] - dots[0, 9]).abs() > 1e-3  # other offset differs
    torch.testing.assert_close(Q.norm(dim=-1), q.norm().expand(16))
    x = torch.randn(2, 3, 3 + 16, 16)
    out = apply_rope(x, sin, cos)
    assert torch.equal(out[:, :, :3], x[:, :, :3])
    assert not torch.allclose(out[:, :, 3:], x[:, :, 3:])


@pytest.mark.parametrize('hw', [(32, 32), (40, 64), (24, 8)])
def test_output_types_any_size(hw):
    model = tiny().eval()
    x = torch.randn(2, 3, *hw)
    grid = (hw[0] // 8, hw[1] // 8)
    n = grid[0] * grid[1]
    raw = model(x)[0]  # default cls_token
    assert raw.shape == (2, 32)
    model.out_type = 'raw'
    tokens = model(x)[0]
    assert tokens.shape == (2, 3 + n, 32)
    torch.testing.assert_close(tokens[:, 0], raw)
    model.out_type = 'featmap'
    fmap = model(x)[0]
    assert fmap.shape == (2, 32, *grid)
    torch.testing.assert_close(fmap[:, :, 0, -1], tokens[:, 2 + grid[1]])
    model.out_type = 'avg_featmap'
    torch.testing.assert_close(model(x)[0], tokens[:, 3:].mean(1))
    assert model.num_extra_tokens == 3


def test_mask_token_and_errors():
    model = tiny(out_type='raw').eval()
    x1, x2 = torch.randn(2, 1, 3, 32, 32)
    full = torch.ones(1, 4, 4, dtype=torch.bool)
    # every patch masked: the image no longer matters
    torch.testing.assert_close(
        model(x1, mask=full)[0], model(x2, mask=full)[0]
    )
    none = torch.zeros(1, 16, dtype=torch.bool)
    torch.testing.assert_close(model(x1, mask=none)[0], model(x1)[0])
    with pytest.raises(ValueError, match='patch grid'):
        model(x1, mask=torch.zeros(1, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match='out_type'):
        DINOv3ViT(arch=TINY, out_type='bogus')
    with pytest.raises(ValueError, match='Unknown arch'):
        DINOv3ViT(arch='tiny_plus')
    with pytest.raises(ValueError, match='custom arch'):
        DINOv3ViT(arch=dict(embed_dims=32))
    with pytest.raises(ValueError, match='out of range'):
        DINOv3ViT(arch=TINY, out_indices=[2])  # 2 blocks: 0, 1, -1, -2


def test_rope_coordinate_augmentation_train_only():
    torch.manual_seed(0)
    model = tiny(out_type='raw')  # rope_rescale_coords=2 by default
    x = torch.randn(1, 3, 32, 32)
    model.eval()
    ref = model(x)[0]
    model.train()
    a, b = model(x)[0], model(x)[0]
    assert not torch.allclose(a, b)  # random rescale per forward
    plain = tiny(out_type='raw', rope_rescale_coords=None).train()
    plain.load_state_dict(model.state_dict())
    torch.testing.assert_close(plain(x)[0], ref)


def test_with_cp_same_values_and_grads():
    torch.manual_seed(0)
    model = tiny(out_type='raw', rope_rescale_coords=None).train()
    cp_model = tiny(out_type='raw', rope_rescale_coords=None, with_cp=True)
    cp_model.load_state_dict(model.state_dict())
    cp_model.train()
    x = torch.randn(2, 3, 32, 40)
    out, out_cp = model(x)[0], cp_model(x)[0]
    torch.testing.assert_close(out, out_cp)
    out.square().mean().backward()
    out_cp.square().mean().backward()
    for (name, p), q in zip(model.named_parameters(), cp_model.parameters()):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, msg=name)


def test_out_indices_untied_norms_and_attention():
    model = tiny(
        out_type='raw', out_indices=[0, 1], untie_cls_and_patch_norms=True
    ).eval()
    with torch.no_grad():
        model.cls_norm.weight.fill_(2.0)
    x = torch.randn(1, 3, 32, 24)
    first, last = model(x)
    tokens, _ = model.prepare_tokens(x)
    rope = model.rope_embed(4, 3)
    tokens = model.layers[0](tokens, ropes=[rope])
    torch.testing.assert_close(first[:, 3:], model.norm(tokens[:, 3:]))
    torch.testing.assert_close(first[:, :3], model.cls_norm(tokens[:, :3]))
    attn = model.get_last_selfattention(x)
    assert attn.shape == (1, 2, 15, 15)
    torch.testing.assert_close(attn.sum(-1), torch.ones(1, 2, 15))


def test_layer_depth_and_registry():
    model = MODELS.build(dict(type='DINOv3ViT', arch=TINY, patch_size=8))
    assert isinstance(model, DINOv3ViT)
    depth = {
        n: model.get_layer_depth('backbone.' + n, 'backbone.')[0]
        for n, _ in model.named_parameters()
    }
    assert depth['cls_token'] == depth['mask_token'] == 0
    assert depth['register_tokens'] == depth['patch_embed.projection.weight']
    assert depth['layers.1.ls2.gamma'] == 2
    assert depth['norm.weight'] == 3
    assert model.get_layer_depth('head.w', 'backbone.') == (3, 4)


@pytest.mark.parametrize(
    'arch,millions,ffn',
    [('small', 21.6, 1536), ('small_plus', 28.7, 1536), ('base', 85.7, 3072)],
)
def test_released_arches(arch, millions, ffn):
    with torch.device('meta'):
        model = DINOv3ViT(arch=arch)
    n = sum(p.numel() for p in model.parameters())
    assert round(n / 1e6, 1) == millions
    width = model.layers[0].ffn
    width = width.fc1 if hasattr(width, 'fc1') else width.w1
    assert width.out_features == ffn
    assert model.layers[0].attn.qkv.bias_mask.shape == (3 * model.embed_dims,)
    assert model.num_extra_tokens == 5
    # larger arches exist as dicts
    assert DINOv3ViT.arch_zoo['large']['num_layers'] == 24
    assert DINOv3ViT.arch_zoo['7b']['qkv_bias'] is False


def test_dinov2_algorithm_trains_with_it():
    """The DINOv2 algorithm (DINO + iBOT + KoLeo) runs it unchanged."""
    K = 16
    cfg = dict(
        type='DINOv2',
        backbone=dict(
            type='DINOv3ViT',
            arch=TINY,
            patch_size=8,
            out_type='raw',
            drop_path_rate=0.1,
        ),
        head=dict(
            type='DINOHead',
            in_channels=32,
            n_prototypes=K,
            hidden_channels=32,
            bottleneck_channels=8,
        ),
        loss=dict(type='DINOLoss', out_dim=K),
        ibot_loss=dict(type='iBOTPatchLoss', out_dim=K),
        data_preprocessor=dict(
            type='SelfSupDataPreprocessor', mean=[0, 0, 0], std=[1, 1, 1]
        ),
    )
    model = MODELS.build(cfg)
    model.init_weights()
    torch.manual_seed(0)
    views = [torch.randn(2, 3, 32, 32) for _ in range(2)]
    views += [torch.randn(2, 3, 16, 16) for _ in range(2)]
    samples = []
    for _ in range(2):
        mask = torch.zeros(2, 4, 4, dtype=torch.bool)
        mask[:, :2, :2] = True
        samples.append(DataSample().set_mask(mask))
    losses = model.loss(views, samples)
    assert (
        set(losses) == {'loss_dino', 'loss_ibot', 'loss_koleo'} | DINO_LOGGED
    )
    sum(losses.values()).backward()
    backbone = model.backbone
    assert backbone.mask_token.grad.abs().sum() > 0
    assert backbone.register_tokens.grad.abs().sum() > 0
    feats = model.extract_feat(views[0])
    assert feats.shape == (2, 32)


def test_blocks_built_with_their_rate_and_no_drop_without_grad():
    """Each block is a DINOBlock built with the config's rate (no
    DropPath module to zero for the teacher); without autograd (the EMA
    teacher) a training-mode forward drops nothing."""
    from mmssl.models.layers import DINOBlock

    model = tiny(out_type='raw', drop_path_rate=0.5, rope_rescale_coords=None)
    assert all(type(b) is DINOBlock for b in model.layers)
    assert [b.drop_path_rate for b in model.layers] == [0.5, 0.5]
    assert not any(hasattr(m, 'drop_prob') for m in model.modules())
    x = torch.randn(8, 3, 16, 16)
    want = model.eval()(x)[0]
    model.train()
    with torch.no_grad():
        torch.testing.assert_close(model(x)[0], want)
    assert not torch.allclose(model(x)[0], want)  # with grad: drops
