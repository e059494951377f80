# Copyright (c) mmssl contributors. All rights reserved.
"""Patch embedding of images or volumes of any size.

Splits the input into non-overlapping patches and projects each to C
channels with one strided convolution, as the ViT does (Dosovitskiy et
al., 2021, `An Image is Worth 16x16 Words
<https://arxiv.org/abs/2010.11929>`_): ``Conv2d`` over images,
``Conv3d`` over volumes. Sides that are not a multiple of the patch are
padded with zeros at their end (the DINO and 3D ViTs, as mmcv's
``PatchEmbed``) or cut (DINOv3).
"""

import math
from typing import Sequence, Tuple, Union

import torch.nn.functional as F
from torch import Tensor, nn

Size = Union[int, Sequence[int]]


def to_ntuple(size: Size, n: int, name: str) -> Tuple[int, ...]:
    """``size`` as n positive ints (an int is repeated)."""
    if isinstance(size, int):
        size = (size,) * n
    size = tuple(int(s) for s in size)
    if len(size) != n or min(size) <= 0:
        raise ValueError(
            f'{name} must be a positive int or {n} of them, got {size!r}.'
        )
    return size


class PatchEmbed(nn.Module):
    """Inputs (B, C_in, *S) -> tokens (B, N, C) and the patch grid.

    Args:
        in_channels (int): Input channels C_in.
        embed_dims (int): Token width C.
        patch_size (int | Sequence[int]): Patch side, per axis or one for
            all.
        spatial_dims (int): 2 (images (B, C_in, H, W)) or 3 (volumes
            (B, C_in, D, H, W)). Defaults to 2.
        pad (bool): Pad each side to a multiple of the patch (True) or
            drop the pixels past the last full patch (False). Defaults to
            False.
        bias (bool): Bias of the projection. Defaults to True.
    """

    def __init__(
        self,
        in_channels: int,
        embed_dims: int,
        patch_size: Size,
        spatial_dims: int = 2,
        pad: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if spatial_dims not in (2, 3):
            raise ValueError(
                f'spatial_dims must be 2 or 3, got {spatial_dims}.'
            )
        self.spatial_dims = spatial_dims
        self.patch_size = to_ntuple(patch_size, spatial_dims, 'patch_size')
        self.pad = pad
        conv = nn.Conv2d if spatial_dims == 2 else nn.Conv3d
        self.projection = conv(
            in_channels,
            embed_dims,
            kernel_size=self.patch_size,
            stride=self.patch_size,
            bias=bias,
        )

    def grid(self, size: Size) -> Tuple[int, ...]:
        """The patch grid of an input of spatial ``size``."""
        size = to_ntuple(size, self.spatial_dims, 'size')
        cut = math.ceil if self.pad else math.floor
        return tuple(cut(s / p) for s, p in zip(size, self.patch_size))

    def forward(self, x: Tensor) -> Tuple[Tensor, Tuple[int, ...]]:
        """(B, C_in, *S) -> tokens (B, N, C), N the product of the grid,
        patches in row-major order, and the grid."""
        if x.dim() != self.spatial_dims + 2:
            kind = 'images (B, C, H, W)'
            if self.spatial_dims == 3:
                kind = 'volumes (B, C, D, H, W)'
            raise ValueError(
                f'PatchEmbed expects {kind}, got shape {tuple(x.shape)}.'
            )
        if self.pad:
            pads = []
            sizes = reversed(x.shape[2:])
            for size, p in zip(sizes, reversed(self.patch_size)):
                pads += [0, (-size) % p]
            if any(pads):
                x = F.pad(x, pads)
        x = self.projection(x)  # (B, C, *grid)
        grid = tuple(x.shape[2:])
        return x.flatten(2).transpose(1, 2), grid  # (B, N, C)


__all__ = ['PatchEmbed', 'to_ntuple']
