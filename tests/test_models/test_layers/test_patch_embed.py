"""PatchEmbed: images or volumes, remainders padded or cut."""

import pytest
import torch
import torch.nn.functional as F
from mmcv.cnn.bricks.transformer import PatchEmbed as MMCVPatchEmbed

from mmssl.models.backbones import DINOVisionTransformer
from mmssl.models.layers import PatchEmbed


def test_padded_equals_mmcv_patch_embed():
    # The DINO ViT used mmcv's PatchEmbed (corner padding); the padded
    # PatchEmbed gives the same tokens and grid, also for sides that are
    # not a multiple of the patch.
    torch.manual_seed(0)
    ref = MMCVPatchEmbed(
        in_channels=3,
        embed_dims=8,
        conv_type='Conv2d',
        kernel_size=6,
        stride=6,
        input_size=(20, 27),
    )
    ours = PatchEmbed(3, 8, 6, pad=True)
    ours.load_state_dict(ref.state_dict())
    assert ours.grid((20, 27)) == tuple(ref.init_out_size) == (4, 5)
    x = torch.randn(2, 3, 20, 27)
    want, want_grid = ref(x)
    got, grid = ours(x)
    assert grid == tuple(want_grid) == (4, 5)
    torch.testing.assert_close(got, want)


def test_cut_drops_the_remainder():
    embed = PatchEmbed(2, 4, 4)
    x = torch.randn(1, 2, 10, 13)
    tokens, grid = embed(x)
    assert grid == embed.grid((10, 13)) == (2, 3)
    want, _ = embed(x[:, :, :8, :12])
    torch.testing.assert_close(tokens, want)


def test_volumes_padded_row_major():
    embed = PatchEmbed(1, 1, (2, 2, 3), spatial_dims=3, pad=True)
    assert isinstance(embed.projection, torch.nn.Conv3d)
    torch.nn.init.ones_(embed.projection.weight)
    torch.nn.init.zeros_(embed.projection.bias)
    x = torch.randn(1, 1, 4, 3, 5)
    tokens, grid = embed(x)
    assert grid == embed.grid((4, 3, 5)) == (2, 2, 2)
    # token n sums patch n of the zero-padded volume, (d, h, w) row-major
    padded = F.pad(x, [0, 1, 0, 1])[0, 0]  # (4, 4, 6)
    sums = padded.reshape(2, 2, 2, 2, 2, 3).sum((1, 3, 5)).flatten()
    torch.testing.assert_close(tokens[0, :, 0], sums)


def test_errors_name_the_bad_value():
    with pytest.raises(ValueError, match=r'volumes \(B, C, D, H, W\)'):
        PatchEmbed(1, 4, 2, spatial_dims=3)(torch.randn(1, 1, 4, 4))
    with pytest.raises(ValueError, match=r'images \(B, C, H, W\)'):
        PatchEmbed(1, 4, 2)(torch.randn(1, 4, 4))
    with pytest.raises(ValueError, match='spatial_dims must be 2 or 3'):
        PatchEmbed(1, 4, 2, spatial_dims=1)
    with pytest.raises(ValueError, match=r'patch_size .* got \(0, 0\)'):
        PatchEmbed(1, 4, 0)
    arch = dict(embed_dims=8, num_layers=1, num_heads=2)
    with pytest.raises(ValueError, match=r"\['norm_cfg'\] are not Patch"):
        DINOVisionTransformer(arch, patch_cfg=dict(norm_cfg=None))
    vit = DINOVisionTransformer(arch, 16, 8, patch_cfg=dict(bias=False))
    assert vit.patch_embed.projection.bias is None
