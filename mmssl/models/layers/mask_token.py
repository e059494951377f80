# Copyright (c) mmssl contributors. All rights reserved.
"""The learnable mask token of masked image modelling.

iBOT (Zhou et al., 2021, `arXiv:2111.07832
<https://arxiv.org/abs/2111.07832>`_) and DINOv2/v3 replace the
embeddings of masked patches by one learned vector before the blocks.
"""

from typing import Optional, Tuple

import torch
from torch import Tensor


def apply_mask_token(
    x: Tensor,
    mask: Optional[Tensor],
    token: Tensor,
    grid: Tuple[int, int],
    keep_in_graph: bool = False,
) -> Tensor:
    """Replace the patch embeddings that ``mask`` marks by ``token``.

    Args:
        x (Tensor): Patch embeddings (B, N, C), N = Hp * Wp.
        mask (Tensor, optional): Bool mask (B, Hp, Wp) or (B, N); True
            marks a masked patch. None: nothing masked.
        token (Tensor): The mask token (C,).
        grid (tuple[int, int]): The patch grid (Hp, Wp), for the error.
        keep_in_graph (bool): Without a mask, add ``0 * token`` so that
            the token stays in the autograd graph (DDP without
            ``find_unused_parameters`` needs every parameter used in a
            step). Defaults to False.

    Returns:
        Tensor: (B, N, C).

    Raises:
        ValueError: ``mask`` does not fit ``x``.
    """
    B = x.shape[0]
    if mask is None:
        return x + 0.0 * token.to(x.dtype) if keep_in_graph else x
    if mask.shape[0] != B or mask[0].numel() != x.shape[1]:
        raise ValueError(
            f'mask of shape {tuple(mask.shape)} does not match the '
            f'{B} images with a {grid[0]}x{grid[1]} patch grid; '
            f'expected ({B}, {grid[0]}, {grid[1]}) or '
            f'({B}, {grid[0] * grid[1]}).'
        )
    mask = mask.reshape(B, -1, 1).bool()
    return torch.where(mask, token.to(x.dtype), x)


__all__ = ['apply_mask_token']
