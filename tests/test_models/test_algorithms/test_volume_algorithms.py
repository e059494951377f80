"""SimCLR3D and MAE3D: their pieces against hand-computed values."""

import pytest
import torch

from mmssl.models.algorithms.mae3d import (
    masked_mse,
    patchify_3d,
    random_masking,
)
from mmssl.models.losses import nt_xent_loss
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

pytest.importorskip('monai')
register_all_modules()

_VIT = dict(
    type='VisionTransformer3D',
    arch=dict(
        embed_dims=16, num_layers=1, num_heads=2, feedforward_channels=32
    ),
    img_size=8,
    patch_size=4,
)


def test_patchify_3d_matches_loop():
    x = torch.arange(2 * 2 * 4 * 4 * 8, dtype=torch.float32)
    x = x.reshape(2, 2, 4, 4, 8)  # (B, C, D, H, W)
    p = (2, 2, 4)
    out = patchify_3d(x, p)
    assert out.shape == (2, 2 * 2 * 2, 2 * 2 * 4 * 2)
    for b in range(2):
        n = 0
        for d in range(2):
            for h in range(2):
                for w in range(2):
                    expect = [
                        x[b, c, d * 2 + i, h * 2 + j, w * 4 + k].item()
                        for i in range(2)
                        for j in range(2)
                        for k in range(4)
                        for c in range(2)
                    ]
                    assert out[b, n].tolist() == expect
                    n += 1


def test_patchify_follows_patch_embed_order():
    """Token n of the 3D PatchEmbed sees exactly the voxels of patch n."""
    from mmssl.models.layers import PatchEmbed

    embed = PatchEmbed(1, 1, 2, spatial_dims=3, pad=True)
    torch.nn.init.ones_(embed.projection.weight)
    torch.nn.init.zeros_(embed.projection.bias)
    x = torch.randn(1, 1, 4, 4, 4)
    tokens, _ = embed(x)
    sums = patchify_3d(x, (2, 2, 2)).sum(-1)
    assert torch.allclose(tokens[..., 0], sums, atol=1e-5)


def test_random_masking_counts_and_restore():
    torch.manual_seed(0)
    keep, mask, restore = random_masking(3, 16, 0.75)
    assert keep.shape == (3, 4)
    assert mask.sum(1).tolist() == [12.0] * 3
    for b in range(3):
        assert mask[b, keep[b]].sum() == 0  # kept = unmasked
        order = torch.cat([keep[b], (mask[b] > 0).nonzero()[:, 0]])
        # [kept, masked] put back by restore is the identity order
        assert sorted(order.tolist()) == list(range(16))
    x = torch.arange(16).repeat(3, 1)
    shuffled = torch.cat(
        [torch.gather(x, 1, keep), x.new_full((3, 12), -1)], 1
    )
    back = torch.gather(shuffled, 1, restore)
    assert torch.equal(back[mask == 0], x[mask == 0])


def test_masked_mse_counts_masked_patches_only():
    pred = torch.zeros(1, 3, 2, dtype=torch.float64)
    target = torch.tensor(
        [[[1.0, 1.0], [2.0, 0.0], [100.0, 100.0]]], dtype=torch.float64
    )
    mask = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    # patch 0: (1 + 1) / 2 = 1; patch 1: (4 + 0) / 2 = 2; patch 2 visible
    assert masked_mse(pred, target, mask, norm_pix=False).item() == 1.5
    # normalized targets: patch 0 is constant -> 0; patch 1 -> (+-1)/sqrt(2)
    # (mean 1, unbiased variance 2): squared mean 1 / (2 + eps)
    got = masked_mse(pred, target, mask, norm_pix=True).item()
    expect = (0.0 + 1.0 / (2.0 + 1e-6)) / 2
    assert got == pytest.approx(expect, rel=1e-9)


def test_mae3d_loss_only_depends_on_masked_patches():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='MAE3D',
            backbone=_VIT,
            neck=dict(
                type='MAEDecoder3D',
                in_channels=16,
                num_patches=8,
                patch_size=4,
                decoder_dims=16,
                num_layers=1,
                num_heads=2,
            ),
            mask_ratio=0.5,
            norm_pix=False,
        )
    )
    model.init_weights()
    x = torch.randn(2, 1, 8, 8, 8)
    torch.manual_seed(1)
    loss = model.loss([x], None)['loss']
    # recompute with the same mask draw by hand
    torch.manual_seed(1)
    keep, mask, restore = random_masking(2, 8, 0.5)
    pred = model.neck(model.encode_visible(x, keep), restore)
    target = patchify_3d(x, (4, 4, 4))
    per_patch = ((pred - target) ** 2).mean(-1)
    expect = per_patch[mask.bool()].mean()
    assert loss.item() == pytest.approx(expect.item(), rel=1e-5)
    loss.backward()
    assert model.backbone.patch_embed.projection.weight.grad.abs().sum() > 0


def test_mae3d_encoder_sees_visible_patches_only():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='MAE3D',
            backbone=_VIT,
            neck=dict(
                type='MAEDecoder3D',
                in_channels=16,
                num_patches=8,
                patch_size=4,
                decoder_dims=16,
                num_layers=1,
            ),
        )
    )
    model.eval()
    x = torch.randn(1, 1, 8, 8, 8)
    keep = torch.tensor([[0, 5]])
    ref = model.encode_visible(x, keep)
    y = x.clone()
    y[:, :, 4:, 4:, 4:] += 10  # patch 7 (d=1, h=1, w=1): not kept
    assert torch.allclose(model.encode_visible(y, keep), ref)
    y[:, :, :4, :4, :4] += 10  # patch 0: kept
    assert not torch.allclose(model.encode_visible(y, keep), ref)


def test_simclr3d_loss_is_nt_xent_of_interleaved_views():
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='SimCLR3D',
            backbone=dict(_VIT, out_type='cls_token'),
            neck=dict(
                type='NonLinearNeck',
                in_channels=16,
                hid_channels=8,
                out_channels=4,
                num_layers=2,
                with_avg_pool=False,
            ),
            loss=dict(type='NTXentLoss', temperature=0.3),
        )
    )
    model.eval()  # BN of the neck in eval: rows are independent
    v1, v2 = torch.randn(3, 1, 8, 8, 8), torch.randn(3, 1, 8, 8, 8)
    loss = model.loss([v1, v2], None)['loss']
    z1 = model.neck(model.backbone(v1))[0]
    z2 = model.neck(model.backbone(v2))[0]
    rows = torch.stack([z1[0], z2[0], z1[1], z2[1], z1[2], z2[2]])
    assert loss.item() == pytest.approx(
        nt_xent_loss(rows, 0.3).item(), rel=1e-5
    )
