"""A light transposed-convolution decoder from a coarse 3D feature map back
to the voxel grid (the inpainting head of SwinUNETR pretraining)."""

import math

import torch
import torch.nn as nn
from mmengine.model import BaseModule

from mmssl.registry import MODELS


@MODELS.register_module()
class ConvTransposeDecoder3D(BaseModule):
    """Upsample a (B, C, d, h, w) feature map ``scale`` times to volumes.

    ``log2(scale)`` stages of ``ConvTranspose3d(kernel 2, stride 2)`` and
    LeakyReLU, each halving the channels (not below ``min_channels``),
    then a 1x1x1 convolution to ``out_channels``: the light
    reconstruction head of Tang et al., 2022
    (https://arxiv.org/abs/2111.14791), which decodes the last Swin stage
    to the full input resolution.

    Args:
        in_channels (int): Channels of the feature map.
        scale (int): Upsampling factor, a power of two (the encoder's
            stride, 32 for the last stage of a SwinViT with 2-voxel
            patches).
        out_channels (int): Volume channels. Defaults to 1.
        min_channels (int): Narrowest stage. Defaults to 8.
        init_cfg (dict, optional): mmengine init config.
    """

    def __init__(
        self,
        in_channels: int,
        scale: int,
        out_channels: int = 1,
        min_channels: int = 8,
        init_cfg=None,
    ) -> None:
        super().__init__(init_cfg)
        stages = int(round(math.log2(scale))) if scale >= 1 else -1
        if stages < 0 or 2**stages != scale:
            raise ValueError(f'scale must be a power of two, got {scale}.')
        layers = []
        ch = int(in_channels)
        for _ in range(stages):
            nxt = max(ch // 2, min_channels)
            layers += [
                nn.ConvTranspose3d(ch, nxt, kernel_size=2, stride=2),
                nn.LeakyReLU(0.01, inplace=True),
            ]
            ch = nxt
        layers.append(nn.Conv3d(ch, out_channels, kernel_size=1))
        self.scale = scale
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, d, h, w) -> (B, out_channels, d * s, h * s, w * s)."""
        if isinstance(x, (list, tuple)):
            x = x[-1]
        if x.dim() != 5:
            raise ValueError(
                f'ConvTransposeDecoder3D expects (B, C, d, h, w), got '
                f'{tuple(x.shape)}.'
            )
        return self.layers(x)
