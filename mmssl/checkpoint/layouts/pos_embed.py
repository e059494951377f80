"""The one position-embedding resize, for checkpoints and for inputs.

A ViT's absolute position embedding (1, P + H*W, C) holds ``P`` prefix
tokens (the class token; registers carry none in DINOv2) and an H x W grid.
Loading weights trained at another resolution (DINOv2 hub files: 518 px,
a 37 x 37 grid) and running on another input size both resize the grid
bicubically; the prefix rows are kept.
"""

import math
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F


def square_grid(num_patches: int) -> Tuple[int, int]:
    """``(S, S)`` with ``S * S == num_patches``.

    Raises:
        ValueError: ``num_patches`` is not a square.
    """
    side = math.isqrt(num_patches)
    if side * side != num_patches:
        raise ValueError(
            f'{num_patches} position-embedding rows are not a square grid; '
            'give the grid explicitly.'
        )
    return side, side


def resize_pos_embed(
    pos_embed: torch.Tensor,
    dst_grid: Sequence[int],
    src_grid: Optional[Sequence[int]] = None,
    num_prefix_tokens: int = 1,
    offset: float = 0.0,
    antialias: bool = False,
) -> torch.Tensor:
    """Resize the grid part of a position embedding, bicubically.

    Args:
        pos_embed (torch.Tensor): (1, P + Hs*Ws, C).
        dst_grid (Sequence[int]): (Hd, Wd).
        src_grid (Sequence[int], optional): (Hs, Ws); None means square.
        num_prefix_tokens (int): P, rows kept as they are. Defaults to 1.
        offset (float): If > 0, resize with
            ``scale_factor=((Hd + offset) / Hs, (Wd + offset) / Ws)`` as the
            original DINOv2 hub models do (``interpolate_offset=0.1``);
            else to the exact size. Defaults to 0.
        antialias (bool): Antialiased bicubic. Defaults to False.

    Returns:
        torch.Tensor: (1, P + Hd*Wd, C) in the input's dtype; the input
        itself when the grids are equal.

    Raises:
        ValueError: The rows do not match ``src_grid``.
        RuntimeError: ``offset`` rounds to a grid other than ``dst_grid``.
    """
    dim = pos_embed.shape[-1]
    num_patches = pos_embed.shape[1] - num_prefix_tokens
    src_h, src_w = (
        square_grid(num_patches) if src_grid is None else tuple(src_grid)
    )
    if src_h * src_w != num_patches:
        raise ValueError(
            f'pos_embed {tuple(pos_embed.shape)} has {num_patches} grid '
            f'rows, not {src_h}x{src_w}.'
        )
    dst = tuple(int(s) for s in dst_grid)
    if dst == (src_h, src_w):
        return pos_embed
    # (1, Hs*Ws, C) -> (1, C, Hs, Ws)
    grid = pos_embed[:, num_prefix_tokens:]
    if grid.dtype != torch.float64:  # float32 (DINOv2), float64 stays
        grid = grid.float()
    grid = grid.reshape(1, src_h, src_w, dim).permute(0, 3, 1, 2)
    if offset:
        scale = ((dst[0] + offset) / src_h, (dst[1] + offset) / src_w)
        grid = F.interpolate(
            grid, scale_factor=scale, mode='bicubic', antialias=antialias
        )
    else:
        grid = F.interpolate(
            grid, size=dst, mode='bicubic', antialias=antialias
        )
    if tuple(grid.shape[-2:]) != dst:
        raise RuntimeError(
            f'Position embedding resized to {tuple(grid.shape[-2:])} '
            f'instead of {dst}; try interpolate_offset=0.'
        )
    grid = grid.flatten(2).transpose(1, 2)  # (1, Hd*Wd, C)
    prefix = pos_embed[:, :num_prefix_tokens]
    return torch.cat([prefix, grid.to(pos_embed.dtype)], dim=1)


__all__ = ['resize_pos_embed', 'square_grid']
