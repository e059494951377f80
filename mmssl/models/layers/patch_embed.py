# Copyright (c) mmssl contributors. All rights reserved.
"""Patch embedding of any input size, remainders cut.

Splits an image into non-overlapping ``patch_size`` squares and projects
each to C channels with one strided convolution, as the ViT does
(Dosovitskiy et al., 2021, `An Image is Worth 16x16 Words
<https://arxiv.org/abs/2010.11929>`_). Pixels past the last full patch
are dropped (mmcv's ``PatchEmbed``, used by the DINO ViT, pads instead).
"""

from typing import Tuple

from torch import Tensor, nn


class PatchEmbed(nn.Module):
    """Images (B, C_in, H, W) -> tokens (B, Hp*Wp, C) and grid (Hp, Wp).

    Args:
        in_channels (int): Image channels C_in.
        embed_dims (int): Token width C.
        patch_size (int): Side of a patch; ``Hp = H // patch_size``.
    """

    def __init__(self, in_channels: int, embed_dims: int, patch_size: int):
        super().__init__()
        self.patch_size = patch_size
        self.projection = nn.Conv2d(
            in_channels, embed_dims, patch_size, stride=patch_size
        )

    def forward(self, x: Tensor) -> Tuple[Tensor, Tuple[int, int]]:
        x = self.projection(x)  # (B, C, Hp, Wp)
        grid = (x.shape[2], x.shape[3])
        return x.flatten(2).transpose(1, 2), grid  # (B, Hp*Wp, C)


__all__ = ['PatchEmbed']
