# Copyright (c) mmssl contributors. All rights reserved.
"""2D axial rotary position embedding (RoPE) for ViT patch tokens.

The variant used by DINOv3 (Siméoni et al., 2025, `DINOv3
<https://arxiv.org/abs/2508.10104>`_): each patch centre gets coordinates
in [-1, 1] along the height and the width (each axis normalised by its own
patch count by default), every head dimension pair is rotated by an angle
``2 * pi * coord / period``, the first quarter of the head dimensions uses
the row coordinate, the second quarter the column coordinate, and the
second half of the head repeats the first (rotate-half convention). There
are no learnable weights; ``periods`` is a buffer so that released
checkpoints, which store it, load exactly. During training the coordinates
can be augmented (shift, per-axis jitter, global rescale), as in DINOv3.
"""

import math
from typing import Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor

_NORMALIZE = ('separate', 'max', 'min')


def rope_periods(head_dims: int, base: float = 100.0) -> Tensor:
    """The default periods ``base ** (4 i / head_dims)``, i < head_dims / 4.

    Args:
        head_dims (int): Dimensions per attention head (multiple of 4).
        base (float): Largest-period base. Defaults to 100 (DINOv3).

    Returns:
        Tensor: Periods (head_dims // 4,), float32.
    """
    if head_dims % 4:
        raise ValueError(f'head_dims must be a multiple of 4: {head_dims}.')
    exponents = torch.arange(head_dims // 4, dtype=torch.float64)
    return (base ** (4.0 * exponents / head_dims)).float()


def rotate_half(x: Tensor) -> Tensor:
    """``[a, b] -> [-b, a]`` on the two halves of the last dimension."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rope(x: Tensor, sin: Tensor, cos: Tensor) -> Tensor:
    """Rotate the last ``N`` tokens of ``x`` (the patches), keep the rest.

    Args:
        x (Tensor): Queries or keys (B, heads, T, head_dims); the first
            ``T - N`` tokens (CLS, registers) are returned unchanged.
        sin (Tensor): Sines (N, head_dims).
        cos (Tensor): Cosines (N, head_dims).

    Returns:
        Tensor: Same shape and dtype as ``x``.
    """
    num_prefix = x.shape[-2] - sin.shape[-2]
    if num_prefix < 0:
        raise ValueError(
            f'{sin.shape[-2]} RoPE positions for only {x.shape[-2]} tokens.'
        )
    prefix, patches = x.split([num_prefix, sin.shape[-2]], dim=-2)
    dtype = x.dtype
    patches = patches.to(sin.dtype)
    patches = patches * cos + rotate_half(patches) * sin
    return torch.cat([prefix, patches.to(dtype)], dim=-2)


class RoPE2D(nn.Module):
    """Sines and cosines of a 2D axial RoPE for an ``H x W`` patch grid.

    Args:
        head_dims (int): Dimensions per attention head (multiple of 4).
        base (float): Base of the default periods. Defaults to 100.
        normalize_coords (str): ``'separate'`` (rows divided by H, columns
            by W), ``'max'`` or ``'min'`` (both by max/min(H, W)).
            Defaults to ``'separate'`` (DINOv3).
        shift_coords (float, optional): Training only: add one uniform
            offset in [-s, s] per axis. Defaults to None.
        jitter_coords (float, optional): Training only: scale each axis by
            a log-uniform factor in [1/j, j]. Defaults to None.
        rescale_coords (float, optional): Training only: scale both axes by
            one log-uniform factor in [1/r, r] (released DINOv3 models: 2).
            Defaults to None.
    """

    def __init__(
        self,
        head_dims: int,
        base: float = 100.0,
        normalize_coords: str = 'separate',
        shift_coords: Optional[float] = None,
        jitter_coords: Optional[float] = None,
        rescale_coords: Optional[float] = None,
    ) -> None:
        super().__init__()
        if normalize_coords not in _NORMALIZE:
            raise ValueError(
                f'normalize_coords must be one of {_NORMALIZE}, got '
                f'{normalize_coords!r}.'
            )
        self.head_dims = head_dims
        self.base = base
        self.normalize_coords = normalize_coords
        self.shift_coords = shift_coords
        self.jitter_coords = jitter_coords
        self.rescale_coords = rescale_coords
        self.register_buffer('periods', rope_periods(head_dims, base))

    def reset_periods(self) -> None:
        """Recompute ``periods`` from ``base``."""
        self.periods.copy_(rope_periods(self.head_dims, self.base))

    def _coords(self, H: int, W: int, dtype: torch.dtype) -> Tensor:
        """Patch-centre coordinates (H*W, 2) in [-1, 1], rows first."""
        if self.normalize_coords == 'separate':
            denom_h, denom_w = H, W
        elif self.normalize_coords == 'max':
            denom_h = denom_w = max(H, W)
        else:
            denom_h = denom_w = min(H, W)
        kw = dict(device=self.periods.device, dtype=dtype)
        rows = torch.arange(0.5, H, **kw) / denom_h
        cols = torch.arange(0.5, W, **kw) / denom_w
        grid = torch.meshgrid(rows, cols, indexing='ij')
        coords = torch.stack(grid, dim=-1).flatten(0, 1)  # (H*W, 2)
        return 2.0 * coords - 1.0

    def _augment(self, coords: Tensor) -> Tensor:
        kw = dict(device=coords.device, dtype=coords.dtype)
        if self.shift_coords is not None:
            s = self.shift_coords
            coords = coords + torch.empty(2, **kw).uniform_(-s, s)
        if self.jitter_coords is not None:
            j = math.log(self.jitter_coords)
            coords = coords * torch.empty(2, **kw).uniform_(-j, j).exp()
        if self.rescale_coords is not None:
            r = math.log(self.rescale_coords)
            coords = coords * torch.empty(1, **kw).uniform_(-r, r).exp()
        return coords

    def forward(self, H: int, W: int) -> Tuple[Tensor, Tensor]:
        """Return ``(sin, cos)``, each (H*W, head_dims), in float32 (float64
        for a float64 model), whatever the model's compute dtype."""
        dtype = torch.promote_types(self.periods.dtype, torch.float32)
        coords = self._coords(H, W, dtype)
        if self.training:
            coords = self._augment(coords)
        periods = self.periods.to(dtype)
        # (H*W, 2, D/4) -> (H*W, D/2): row angles, then column angles
        angles = 2 * math.pi * coords[:, :, None] / periods[None, None, :]
        angles = angles.flatten(1, 2).repeat(1, 2)  # (H*W, D)
        return angles.sin(), angles.cos()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # Layouts that do not store the periods (HF transformers computes
        # them on the fly) keep this module's own, so strict loads work.
        state_dict.setdefault(prefix + 'periods', self.periods.clone())
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return (
            f'head_dims={self.head_dims}, base={self.base}, '
            f'normalize_coords={self.normalize_coords!r}'
        )


__all__ = ['RoPE2D', 'apply_rope', 'rope_periods', 'rotate_half']
