"""PixMIM: the low-pass target against hand-computed spectra, and one
training step that reconstructs the filtered image."""

import math

import pytest
import torch

from mmssl.models.algorithms.pixmim import PixMIM, low_pass_filter


def _cosine(size: int, k: int) -> torch.Tensor:
    """cos(2 pi k x / size) along the width: one frequency, +-k cycles."""
    x = torch.arange(size, dtype=torch.float64)
    row = torch.cos(2 * math.pi * k * x / size)
    return row.expand(size, size).clone()


def test_low_pass_keeps_mean_and_low_frequency_drops_high():
    # 3 + cos at 1 cycle + cos at 3 cycles per 8 px image
    img = 3.0 + _cosine(8, 1) + 0.5 * _cosine(8, 3)
    img = img[None, None]  # (1, 1, 8, 8)
    # radius 2: the 1-cycle term (distance 1) stays, the 3-cycle one goes
    expected = 3.0 + _cosine(8, 1)
    out = low_pass_filter(img, radius=2)
    torch.testing.assert_close(out[0, 0], expected, atol=1e-9, rtol=0)
    # radius 0.5: only the mean (the DC bin) is left
    out = low_pass_filter(img, radius=0.5)
    torch.testing.assert_close(
        out, torch.full_like(img, 3.0), atol=1e-9, rtol=0
    )
    # radius beyond the corner bin (hypot(4, 4)): the image itself
    out = low_pass_filter(img, radius=6)
    torch.testing.assert_close(out, img, atol=1e-9, rtol=0)


def test_low_pass_is_per_channel_and_keeps_dtype_and_shape():
    img = torch.zeros(2, 3, 8, 8)
    img[1, 2] = _cosine(8, 3).float()  # only one channel of one image
    out = low_pass_filter(img, radius=2)
    assert out.shape == img.shape and out.dtype == torch.float32
    torch.testing.assert_close(out, torch.zeros_like(img), atol=1e-6, rtol=0)


def _tiny_pixmim(radius: float) -> PixMIM:
    arch = dict(
        embed_dims=16, num_layers=1, num_heads=2, feedforward_channels=32
    )
    return PixMIM(
        backbone=dict(
            type='MAEViT',
            arch=arch,
            img_size=16,
            patch_size=4,
            mask_ratio=0.75,
        ),
        neck=dict(
            type='MAEPretrainDecoder',
            num_patches=16,
            patch_size=4,
            embed_dim=16,
            decoder_embed_dim=8,
            decoder_depth=1,
            decoder_num_heads=2,
            mlp_ratio=2,
        ),
        head=dict(
            type='MAEPretrainHead',
            norm_pix=False,
            patch_size=4,
            loss=dict(type='PixelReconstructionLoss', criterion='L2'),
        ),
        low_freq_radius=radius,
    )


def test_loss_reconstructs_the_filtered_image():
    torch.manual_seed(0)
    model = _tiny_pixmim(radius=1.0)
    img = torch.randn(2, 3, 16, 16)
    captured = {}
    real_loss = model.head.loss

    def spy(pred, target, mask):
        captured['target'] = target
        return real_loss(pred, target, mask)

    model.head.loss = spy
    losses = model.loss([img], [])
    torch.testing.assert_close(captured['target'], low_pass_filter(img, 1.0))
    # the filtered target is not the image (high frequencies removed)
    assert (captured['target'] - img).abs().max() > 0.1
    assert losses['loss'].ndim == 0 and torch.isfinite(losses['loss'])
    losses['loss'].backward()
    assert model.backbone.patch_embed.projection.weight.grad is not None


def test_radius_must_be_positive():
    with pytest.raises(ValueError, match='low_freq_radius must be > 0'):
        _tiny_pixmim(radius=0)
