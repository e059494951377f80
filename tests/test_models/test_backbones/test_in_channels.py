"""Every 2D backbone the configs use takes ``in_channels``: a 5-channel
batch trains one step, and every input channel gets a gradient."""

import pytest
import torch

from mmssl.registry import MODELS

TINY_VIT = dict(embed_dims=32, num_layers=2, num_heads=2)

#: (config, name of the first layer's weight): the layer that sees the
#: channels
BACKBONES = {
    'ResNet': (
        dict(
            type='ResNet',
            depth=18,
            stem_channels=16,
            base_channels=16,
            in_channels=5,
        ),
        'conv1.weight',
    ),
    'ResNet_CIFAR': (
        dict(
            type='ResNet_CIFAR',
            depth=18,
            stem_channels=16,
            base_channels=16,
            in_channels=5,
        ),
        'conv1.weight',
    ),
    'VisionTransformer': (
        dict(
            type='VisionTransformer',
            arch=dict(TINY_VIT, feedforward_channels=64),
            img_size=32,
            patch_size=8,
            in_channels=5,
        ),
        'patch_embed.projection.weight',
    ),
    'DINOVisionTransformer': (
        dict(
            type='DINOVisionTransformer',
            arch=TINY_VIT,
            img_size=32,
            patch_size=8,
            num_register_tokens=2,
            in_channels=5,
        ),
        'patch_embed.projection.weight',
    ),
    'DINOv3ViT': (
        dict(
            type='DINOv3ViT',
            arch=TINY_VIT,
            patch_size=8,
            num_register_tokens=2,
            in_channels=5,
        ),
        'patch_embed.projection.weight',
    ),
}


def _last(out):
    out = out[-1] if isinstance(out, (tuple, list)) else out
    return out


@pytest.mark.parametrize('name', sorted(BACKBONES))
def test_five_channel_input_trains_a_step(name):
    cfg, first = BACKBONES[name]
    torch.manual_seed(0)
    model = MODELS.build(cfg)
    model.init_weights()
    model.train()
    w = dict(model.named_parameters())[first]
    assert w.shape[1] == 5, (first, tuple(w.shape))
    before = w.detach().clone()
    x = torch.randn(2, 5, 32, 32)
    feats = _last(model(x))
    assert feats.shape[0] == 2 and torch.isfinite(feats).all()
    feats.float().pow(2).mean().backward()
    # every input channel reaches the loss
    per_channel = w.grad.abs().flatten(2).sum(dim=(0, 2))  # (C_in,)
    assert per_channel.shape == (5,)
    assert (per_channel > 0).all(), per_channel
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert not torch.equal(before, w.detach())
    with pytest.raises(RuntimeError):  # a 3-channel batch is refused
        model(torch.randn(2, 3, 32, 32))
