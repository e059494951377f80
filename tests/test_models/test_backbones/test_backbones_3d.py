"""SwinViT3D (MONAI's SwinUNETR encoder) and VisionTransformer3D."""

import pytest
import torch
import torch.nn.functional as F

from mmssl.models.backbones import SwinViT3D, VisionTransformer3D
from mmssl.models.backbones.vit3d import resize_pos_embed_3d
from mmssl.registry import MODELS

SWIN = dict(feature_size=12, depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2))
TINY = dict(embed_dims=32, num_layers=2, num_heads=4)


def test_swin_vit3d_outputs():
    model = MODELS.build(
        dict(type='SwinViT3D', **SWIN, out_indices=(0, 2, 4))
    ).eval()
    x = torch.randn(2, 1, 32, 64, 32)
    outs = model(x)
    assert [tuple(o.shape) for o in outs] == [
        (2, 12, 16, 32, 16),
        (2, 48, 4, 8, 4),
        (2, 192, 1, 2, 1),
    ]
    assert model.out_channels == (12, 48, 192)
    model.out_type = 'avg_featmap'
    pooled = model(x)[-1]
    torch.testing.assert_close(pooled, outs[-1].mean(dim=(2, 3, 4)))
    with pytest.raises(ValueError, match='divisible by 32'):
        model(torch.randn(1, 1, 32, 32, 40))


def test_swin_vit3d_auto_neck_size_is_the_last_output():
    from mmssl.config.derived_sizes import resolve_model_sizes

    cfg = dict(
        type='SimCLR3D',
        backbone=dict(type='SwinViT3D', **SWIN, out_indices=(1, 3)),
        neck=dict(type='NonLinearNeck', in_channels='auto'),
    )
    assert resolve_model_sizes(cfg)['neck']['in_channels'] == 96
    assert SwinViT3D(**SWIN).num_features == 192


def test_swin_vit3d_with_cp_switches_monai_blocks():
    model = SwinViT3D(**SWIN, with_cp=True)
    blocks = model._blocks()
    assert blocks and all(b.use_checkpoint for b in blocks)
    model.with_cp = False
    assert not any(b.use_checkpoint for b in blocks)


def test_vit3d_shapes_registers_and_mask():
    model = VisionTransformer3D(
        arch=TINY,
        img_size=32,
        patch_size=8,
        num_register_tokens=2,
        out_type='raw',
    ).train()
    x = torch.randn(2, 1, 32, 32, 32)
    assert model(x)[0].shape == (2, 1 + 2 + 64, 32)
    model.eval()
    raw = model(x)[0]
    model.out_type = 'featmap'
    fmap = model(x)[0]
    assert fmap.shape == (2, 32, 4, 4, 4)
    # voxel (z, y, x) of the map is patch token z*16 + y*4 + x
    torch.testing.assert_close(fmap[:, :, 1, 2, 3], raw[:, 3 + 16 + 8 + 3])
    model.train()
    # a local crop of 16^3: 2x2x2 patches, pos-embed resized
    assert model(torch.randn(2, 1, 16, 16, 16))[0].shape == (2, 32, 2, 2, 2)
    # masked patches all see the mask token: their first-layer tokens match
    mask = torch.zeros(2, 4, 4, 4, dtype=torch.bool)
    mask[:, 0, 0, :2] = True
    tokens, grid = model.prepare_tokens(x, mask)
    assert grid == (4, 4, 4)
    patch = tokens[:, 3:]  # CLS + 2 registers first
    pos = model.pos_embed[:, 1:]
    torch.testing.assert_close(
        patch[:, 0] - pos[:, 0], patch[:, 1] - pos[:, 1]
    )
    torch.testing.assert_close(
        patch[0, 0] - pos[0, 0], model.mask_token.expand(32)
    )
    with pytest.raises(ValueError, match='does not match'):
        model.prepare_tokens(x, torch.zeros(2, 8, dtype=torch.bool))


def test_vit3d_arguments_checked():
    with pytest.raises(ValueError, match='multiple of'):
        VisionTransformer3D(arch=TINY, img_size=30, patch_size=8)
    with pytest.raises(ValueError, match=r'\(B, C, D, H, W\)'):
        VisionTransformer3D(arch=TINY, img_size=16, patch_size=8)(
            torch.randn(1, 1, 16, 16)
        )
    small = VisionTransformer3D(arch=TINY, img_size=16, patch_size=8)
    big = VisionTransformer3D(arch=TINY, img_size=32, patch_size=8)
    with pytest.raises(ValueError, match='pos_embed'):
        big.load_state_dict(small.state_dict())


def test_resize_pos_embed_3d_values():
    pos = torch.randn(1, 1 + 2 * 3 * 4, 5)
    assert resize_pos_embed_3d(pos, (2, 3, 4), (2, 3, 4)) is pos
    out = resize_pos_embed_3d(pos, (2, 3, 4), (4, 6, 8))
    assert out.shape == (1, 1 + 4 * 6 * 8, 5)
    torch.testing.assert_close(out[:, 0], pos[:, 0])  # CLS kept
    # a constant field stays constant; a grid maps (d, h, w) in C order
    grid = torch.arange(24.0).reshape(1, 2, 3, 4)
    want = F.interpolate(grid[None], size=(4, 6, 8), mode='trilinear')
    pos = torch.cat([torch.zeros(1, 1, 1), grid.reshape(1, 24, 1)], 1)
    got = resize_pos_embed_3d(pos, (2, 3, 4), (4, 6, 8))[:, 1:, 0]
    torch.testing.assert_close(got, want.reshape(1, -1))
