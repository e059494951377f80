# Copyright (c) mmssl contributors. All rights reserved.
"""A 3D Vision Transformer: the DINO ViT with a volumetric patch embedding.

Everything after the patch embedding (blocks, register tokens, mask token,
non-reentrant activation checkpointing, layer-wise lr decay, output
formats) is :class:`~mmssl.models.backbones.DINOVisionTransformer`'s; this
class replaces the 2D patch embedding by a ``Conv3d`` with kernel = stride
= patch size and the position embedding by one over a ``(D, H, W)`` grid,
resized trilinearly for crops of other sizes (multi-crop).

The weights export to MONAI's ``monai.networks.nets.ViT`` (the encoder of
UNETR) with ``tools/model_converters/mmssl_to_monai_vit.py``.
"""

from typing import Sequence, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from mmssl.registry import MODELS

from .dino_vit import DINOVisionTransformer

Size3D = Union[int, Sequence[int]]


def _triple(size: Size3D, name: str) -> Tuple[int, int, int]:
    if isinstance(size, int):
        size = (size, size, size)
    size = tuple(int(s) for s in size)
    if len(size) != 3 or min(size) <= 0:
        raise ValueError(
            f'{name} must be a positive int or (d, h, w), got {size!r}.'
        )
    return size


def resize_pos_embed_3d(
    pos_embed: torch.Tensor,
    src_grid: Tuple[int, int, int],
    dst_grid: Tuple[int, int, int],
    num_extra_tokens: int = 1,
) -> torch.Tensor:
    """Trilinear resize of a (1, E + d*h*w, C) position embedding.

    The first ``num_extra_tokens`` entries (CLS) are kept as they are.
    """
    if tuple(src_grid) == tuple(dst_grid):
        return pos_embed
    extra = pos_embed[:, :num_extra_tokens]
    grid = pos_embed[:, num_extra_tokens:]
    C = grid.shape[-1]
    # (1, d*h*w, C) -> (1, C, d, h, w)
    grid = grid.reshape(1, *src_grid, C).permute(0, 4, 1, 2, 3)
    grid = F.interpolate(
        grid.float(), size=tuple(dst_grid), mode='trilinear'
    ).to(pos_embed.dtype)
    grid = grid.flatten(2).transpose(1, 2)  # (1, d'*h'*w', C)
    return torch.cat([extra, grid], dim=1)


class PatchEmbed3D(nn.Module):
    """Non-overlapping cubic patches: ``Conv3d(kernel = stride = p)``.

    Args:
        in_channels (int): Input channels (1 for CT / single MRI sequence).
        embed_dims (int): Token width.
        patch_size (int | tuple): Patch size per axis.
    """

    def __init__(
        self, in_channels: int, embed_dims: int, patch_size: Size3D
    ) -> None:
        super().__init__()
        self.patch_size = _triple(patch_size, 'patch_size')
        self.projection = nn.Conv3d(
            in_channels,
            embed_dims,
            kernel_size=self.patch_size,
            stride=self.patch_size,
        )

    def forward(
        self, x: torch.Tensor
    ) -> Tuple[torch.Tensor, Tuple[int, int, int]]:
        """(B, C_in, D, H, W) -> tokens (B, N, C) and the grid (d, h, w)."""
        if x.dim() != 5:
            raise ValueError(
                'PatchEmbed3D expects volumes (B, C, D, H, W), got shape '
                f'{tuple(x.shape)}.'
            )
        pads = []
        for size, p in zip(reversed(x.shape[2:]), reversed(self.patch_size)):
            pads += [0, (-size) % p]
        if any(pads):
            x = F.pad(x, pads)
        x = self.projection(x)  # (B, C, d, h, w)
        grid = tuple(x.shape[2:])
        return x.flatten(2).transpose(1, 2), grid  # (B, N, C)


@MODELS.register_module()
class VisionTransformer3D(DINOVisionTransformer):
    """ViT over volumes: cubic patches, 3D position embedding.

    Args:
        arch (str | dict): As :class:`DINOVisionTransformer`.
        img_size (int | tuple): (D, H, W) the position embedding is built
            for; other sizes are resized trilinearly. Defaults to 96.
        patch_size (int | tuple): Patch size per axis. Defaults to 16.
        in_channels (int): Input channels. Defaults to 1.
        layer_scale_init_value (float): LayerScale init; 0 disables it
            (MONAI's ViT has none; the exporter folds it into the
            weights). Defaults to 0.
        out_type (str): ``'cls_token'``, ``'raw'``, ``'featmap'``
            (B, C, d, h, w) or ``'avg_featmap'``. Defaults to
            ``'cls_token'``.
        **kwargs: Other :class:`DINOVisionTransformer` arguments
            (``num_register_tokens``, ``with_cp``, ``drop_path_rate``,
            ``out_indices``, ``qkv_bias``, ``norm_cfg``, ...).
    """

    def __init__(
        self,
        arch: Union[str, dict] = 'small',
        img_size: Size3D = 96,
        patch_size: Size3D = 16,
        in_channels: int = 1,
        layer_scale_init_value: float = 0.0,
        **kwargs,
    ) -> None:
        img_size = _triple(img_size, 'img_size')
        patch = _triple(patch_size, 'patch_size')
        for s, p in zip(img_size, patch):
            if s % p:
                raise ValueError(
                    f'img_size {img_size} must be a multiple of '
                    f'patch_size {patch}.'
                )
        # The parent builds a 2D patch embedding for a single patch; it is
        # replaced by the 3D one below.
        super().__init__(
            arch=arch,
            img_size=patch[0],
            patch_size=patch[0],
            in_channels=in_channels,
            layer_scale_init_value=layer_scale_init_value,
            **kwargs,
        )
        self.img_size = img_size
        self.patch_size = patch
        self.in_channels = in_channels
        self.patch_embed = PatchEmbed3D(in_channels, self.embed_dims, patch)
        self.patch_resolution = tuple(s // p for s, p in zip(img_size, patch))
        n = self.patch_resolution[0] * self.patch_resolution[1]
        n *= self.patch_resolution[2]
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + n, self.embed_dims))
        if self.frozen_stages > 0:
            self._freeze_stages()

    def _interpolate_pos_embed(
        self, pos_embed: torch.Tensor, grid: Tuple[int, int, int]
    ) -> torch.Tensor:
        return resize_pos_embed_3d(pos_embed, self.patch_resolution, grid)

    def _prepare_pos_embed(self, state_dict, prefix, *args, **kwargs):
        """A loaded pos-embed must match this model's grid exactly."""
        name = prefix + 'pos_embed'
        if name in state_dict and hasattr(self, 'patch_resolution'):
            shape = tuple(state_dict[name].shape)
            if shape != tuple(self.pos_embed.shape):
                raise ValueError(
                    f'Checkpoint pos_embed {shape} does not match this '
                    f'model {tuple(self.pos_embed.shape)} (grid '
                    f'{self.patch_resolution}); build it with the '
                    "checkpoint's img_size and patch_size."
                )

    def _format_output(
        self, x: torch.Tensor, grid: Tuple[int, ...]
    ) -> torch.Tensor:
        if self.out_type != 'featmap':
            return super()._format_output(x, grid)
        patch = x[:, self.num_extra_tokens :]  # (B, N, C)
        # (B, N, C) -> (B, d, h, w, C) -> (B, C, d, h, w)
        return patch.reshape(x.shape[0], *grid, -1).permute(0, 4, 1, 2, 3)


__all__ = ['VisionTransformer3D', 'PatchEmbed3D', 'resize_pos_embed_3d']
