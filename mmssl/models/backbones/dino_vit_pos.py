# Copyright (c) mmssl contributors. All rights reserved.
"""DINOv2's learned position embedding at any patch grid.

DINOv2 (Oquab et al., 2023, `arXiv:2304.07193
<https://arxiv.org/abs/2304.07193>`_) learns one position embedding for
its training grid and resizes it bicubically for every other crop size
(with a +0.1 offset in the scale factor for the original hub models, or
antialiased size-based resizing for the models with registers).
:class:`DINOv2PosEmbedMixin` does that for
:class:`~mmssl.models.DINOVisionTransformer`, caches the result per grid
when no gradient flows into the embedding, and resizes a loaded
checkpoint's embedding whose grid differs.
"""

import math
from typing import Dict, Tuple

import torch

from mmssl.checkpoint.layouts.pos_embed import resize_pos_embed


class DINOv2PosEmbedMixin:
    """Needs ``pos_embed``, ``patch_resolution``, ``interpolate_offset``,
    ``interpolate_antialias`` and a ``_pos_cache`` dict."""

    _pos_cache: Dict[tuple, torch.Tensor]

    def _interpolate_pos_embed(
        self, pos_embed: torch.Tensor, grid: Tuple[int, int]
    ) -> torch.Tensor:
        """Resize ``pos_embed`` (1, 1 + M*M', C) to ``grid`` as DINOv2 does.

        With ``interpolate_offset > 0`` the bicubic resize uses
        ``scale_factor=((h + offset) / M, (w + offset) / M')`` (DINOv2's
        ``interpolate_pos_encoding`` of the original hub models); otherwise
        it resizes to the exact size, optionally antialiased.
        """
        return resize_pos_embed(
            pos_embed,
            grid,
            src_grid=self.patch_resolution,
            offset=self.interpolate_offset,
            antialias=self.interpolate_antialias,
        )

    def interpolate_pos_encoding(self, grid: Tuple[int, int]) -> torch.Tensor:
        """Position embedding (1, 1 + h*w, C) for a ``grid`` of patches.

        Results are cached per grid size when no gradient flows into the
        position embedding (evaluation, frozen teacher); the cache is keyed
        on the parameter's version so in-place updates (EMA) invalidate it.
        """
        pos_embed = self.pos_embed
        if torch.is_grad_enabled() and pos_embed.requires_grad:
            return self._interpolate_pos_embed(pos_embed, grid)
        key = (
            tuple(grid),
            pos_embed._version,
            pos_embed.data_ptr(),
            pos_embed.dtype,
            pos_embed.device,
        )
        cached = self._pos_cache.get(key)
        if cached is None:
            if len(self._pos_cache) > 16:
                self._pos_cache.clear()
            with torch.no_grad():
                cached = self._interpolate_pos_embed(pos_embed, grid)
            self._pos_cache[key] = cached
        return cached

    def _prepare_pos_embed(self, state_dict, prefix, *args, **kwargs):
        """Resize a loaded pos-embed whose grid differs from this model's."""
        name = prefix + 'pos_embed'
        if name not in state_dict:
            return
        ckpt = state_dict[name]
        if ckpt.shape == self.pos_embed.shape:
            return
        src = ckpt.shape[1] - 1
        side = int(math.sqrt(src))
        if side * side != src or ckpt.shape[-1] != self.pos_embed.shape[-1]:
            raise ValueError(
                f'Cannot resize checkpoint pos_embed {tuple(ckpt.shape)} to '
                f'{tuple(self.pos_embed.shape)}: expected (1, 1 + S*S, '
                f'{self.pos_embed.shape[-1]}).'
            )
        from mmengine.logging import MMLogger

        MMLogger.get_current_instance().info(
            f'Resize pos_embed from {side}x{side} to '
            f'{self.patch_resolution[0]}x{self.patch_resolution[1]}.'
        )
        state_dict[name] = resize_pos_embed(
            ckpt,
            self.patch_resolution,
            src_grid=(side, side),
            antialias=self.interpolate_antialias,
        )
