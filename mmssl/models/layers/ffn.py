# Copyright (c) mmssl contributors. All rights reserved.
"""The feed-forward network of the ViT blocks: MLP or SwiGLU.

The two-layer GELU MLP of the ViT, or the SwiGLU FFN (Shazeer, 2020, `GLU
Variants Improve Transformer <https://arxiv.org/abs/2002.05202>`_) that
DINOv2 uses for ViT-g and DINOv3 for ViT-S+/H+/7B, whose hidden width is
``2/3`` of ``feedforward_channels`` rounded up to a multiple of 8 (64 for
DINOv3 ViT-7B). Each comes in two parameter layouts:

- mmpretrain's (the DINO ViT): ``'origin'`` (mmcv's ``FFN``,
  ``layers.0.0`` / ``layers.1``) and ``'swiglu_fused'`` (``w12``, ``w3``),
  each ending in its LayerScale ``gamma2``;
- DINOv3's: ``'mlp'`` (``fc1``, ``fc2``) and ``'swiglu'`` (``w1``, ``w2``,
  ``w3``), without LayerScale (the block holds it).

None adds the residual: the block does.
"""

import torch.nn.functional as F
from mmcv.cnn.bricks.transformer import FFN
from mmpretrain.models.utils import SwiGLUFFN
from torch import Tensor, nn

FFN_TYPES = ('origin', 'swiglu_fused', 'mlp', 'swiglu')
#: The FFN types in mmpretrain's layout.
MMPRETRAIN_FFN_TYPES = ('origin', 'swiglu_fused')


def swiglu_hidden_dims(feedforward_channels: int, align: int = 8) -> int:
    """SwiGLU hidden width: ``2/3`` of the MLP width, rounded up to
    ``align`` (DINOv2 ViT-g: 6144 -> 4096)."""
    return (int(feedforward_channels * 2 / 3) + align - 1) // align * align


class Mlp(nn.Module):
    """``fc2(gelu(fc1(x)))``, DINOv3's parameter names."""

    def __init__(self, dims: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dims, hidden)
        self.fc2 = nn.Linear(hidden, dims)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class SwiGLU(nn.Module):
    """``w3(silu(w1(x)) * w2(x))``, DINOv3's parameter names; ``hidden``
    is the width after :func:`swiglu_hidden_dims`."""

    def __init__(self, dims: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dims, hidden)
        self.w2 = nn.Linear(dims, hidden)
        self.w3 = nn.Linear(hidden, dims)

    def forward(self, x: Tensor) -> Tensor:
        return self.w3(F.silu(self.w1(x)) * self.w2(x))


def build_ffn(
    ffn_type: str,
    embed_dims: int,
    feedforward_channels: int,
    drop_rate: float = 0.0,
    act_cfg: dict = dict(type='GELU'),
    layer_scale_init_value: float = 0.0,
    num_fcs: int = 2,
    swiglu_align: int = 8,
) -> nn.Module:
    """The FFN branch (..., C) -> (..., C) of a block, without residual.

    Args:
        ffn_type (str): One of :data:`FFN_TYPES`.
        embed_dims (int): Token width C.
        feedforward_channels (int): Hidden width (SwiGLU: before its 2/3
            rule).
        drop_rate (float): MLP dropout (``'origin'``). Defaults to 0.
        act_cfg (dict): MLP activation (``'origin'``). Defaults to GELU.
        layer_scale_init_value (float): LayerScale init (mmpretrain's
            layout); 0 disables it.
        num_fcs (int): MLP layers (``'origin'``). Defaults to 2.
        swiglu_align (int): SwiGLU width alignment (``'swiglu'``).
            Defaults to 8.

    Returns:
        nn.Module: Parameters named as mmpretrain's ViT layers
        (``layers.0.0``, ``layers.1``, ``gamma2``; SwiGLU: ``w12``,
        ``w3``, ``gamma2``) or as DINOv3's (``fc1``, ``fc2``; SwiGLU:
        ``w1``, ``w2``, ``w3``).
    """
    if ffn_type == 'origin':
        return FFN(
            embed_dims=embed_dims,
            feedforward_channels=feedforward_channels,
            num_fcs=num_fcs,
            ffn_drop=drop_rate,
            act_cfg=act_cfg,
            add_identity=False,
            layer_scale_init_value=layer_scale_init_value,
        )
    if ffn_type == 'swiglu_fused':
        return SwiGLUFFN(
            embed_dims=embed_dims,
            feedforward_channels=swiglu_hidden_dims(feedforward_channels),
            layer_scale_init_value=layer_scale_init_value,
            add_identity=False,
        )
    if ffn_type == 'mlp':
        return Mlp(embed_dims, feedforward_channels)
    if ffn_type == 'swiglu':
        width = swiglu_hidden_dims(feedforward_channels, swiglu_align)
        return SwiGLU(embed_dims, width)
    raise ValueError(f'ffn_type must be one of {FFN_TYPES}, got {ffn_type!r}.')


__all__ = [
    'FFN_TYPES',
    'MMPRETRAIN_FFN_TYPES',
    'Mlp',
    'SwiGLU',
    'build_ffn',
    'swiglu_hidden_dims',
]
