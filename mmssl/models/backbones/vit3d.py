# Copyright (c) mmssl contributors. All rights reserved.
"""A 3D Vision Transformer: the DINO ViT over volumes.

:class:`~mmssl.models.backbones.DINOVisionTransformer` with
``spatial_dims = 3``: its :class:`~mmssl.models.layers.PatchEmbed` is a
``Conv3d`` with kernel = stride = patch size, and the position embedding
covers a ``(D, H, W)`` grid, resized trilinearly for crops of other sizes
(multi-crop). Everything else (blocks, register tokens, mask token,
activation checkpointing, layer-wise lr decay, output formats) is the DINO
ViT's.

The weights export to MONAI's ``monai.networks.nets.ViT`` (the encoder of
UNETR) with ``tools/model_converters/mmssl_to_monai_vit.py``.
"""

from typing import Sequence, Tuple, Union

import torch
import torch.nn.functional as F

from mmssl.models.layers.patch_embed import to_ntuple
from mmssl.registry import MODELS

from .dino_vit import DINOVisionTransformer

Size3D = Union[int, Sequence[int]]


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
            (``num_register_tokens``, ``with_cp``, stochastic depth,
            ``out_indices``, ``qkv_bias``, ``norm_cfg``, ...).
    """

    spatial_dims = 3

    def __init__(
        self,
        arch: Union[str, dict] = 'small',
        img_size: Size3D = 96,
        patch_size: Size3D = 16,
        in_channels: int = 1,
        layer_scale_init_value: float = 0.0,
        **kwargs,
    ) -> None:
        img_size = to_ntuple(img_size, 3, 'img_size')
        patch = to_ntuple(patch_size, 3, 'patch_size')
        for s, p in zip(img_size, patch):
            if s % p:
                raise ValueError(
                    f'img_size {img_size} must be a multiple of '
                    f'patch_size {patch}.'
                )
        super().__init__(
            arch=arch,
            img_size=img_size,
            patch_size=patch,
            in_channels=in_channels,
            layer_scale_init_value=layer_scale_init_value,
            **kwargs,
        )

    def _interpolate_pos_embed(
        self, pos_embed: torch.Tensor, grid: Tuple[int, int, int]
    ) -> torch.Tensor:
        return resize_pos_embed_3d(pos_embed, self.patch_resolution, grid)

    def _prepare_pos_embed(self, state_dict, prefix, *args, **kwargs):
        """A loaded pos-embed must match this model's grid exactly."""
        name = prefix + 'pos_embed'
        if name in state_dict:
            shape = tuple(state_dict[name].shape)
            if shape != tuple(self.pos_embed.shape):
                raise ValueError(
                    f'Checkpoint pos_embed {shape} does not match this '
                    f'model {tuple(self.pos_embed.shape)} (grid '
                    f'{self.patch_resolution}); build it with the '
                    "checkpoint's img_size and patch_size."
                )


__all__ = ['VisionTransformer3D', 'resize_pos_embed_3d']
