# Copyright (c) mmssl contributors. All rights reserved.
"""The feed-forward network of the DINO ViT block: MLP or SwiGLU.

``'origin'`` is the two-layer MLP of the ViT (mmcv's ``FFN``), ``'swiglu_
fused'`` the SwiGLU FFN (Shazeer, 2020, `GLU Variants Improve Transformer
<https://arxiv.org/abs/2002.05202>`_) that DINOv2 uses for ViT-g, with a
hidden width of ``2/3`` of ``feedforward_channels`` rounded up to 8
(mmpretrain's ``SwiGLUFFNFused`` rule). Both end in their LayerScale
(``gamma2``) and add no residual: the block adds it.
"""

from mmcv.cnn.bricks.transformer import FFN
from mmpretrain.models.utils import SwiGLUFFN
from torch import nn

FFN_TYPES = ('origin', 'swiglu_fused')


def swiglu_hidden_dims(feedforward_channels: int) -> int:
    """SwiGLU hidden width: ``2/3`` of the MLP width, rounded up to 8
    (DINOv2 ViT-g: 6144 -> 4096)."""
    return (int(feedforward_channels * 2 / 3) + 7) // 8 * 8


def build_ffn(
    ffn_type: str,
    embed_dims: int,
    feedforward_channels: int,
    drop_rate: float = 0.0,
    act_cfg: dict = dict(type='GELU'),
    layer_scale_init_value: float = 0.0,
    num_fcs: int = 2,
) -> nn.Module:
    """The FFN branch (..., C) -> (..., C) of a block, without residual.

    Args:
        ffn_type (str): ``'origin'`` (MLP) or ``'swiglu_fused'``.
        embed_dims (int): Token width C.
        feedforward_channels (int): Hidden width (SwiGLU: before its 2/3
            rule).
        drop_rate (float): MLP dropout. Defaults to 0.
        act_cfg (dict): MLP activation. Defaults to GELU.
        layer_scale_init_value (float): LayerScale init; 0 disables it.
        num_fcs (int): MLP layers. Defaults to 2.

    Returns:
        nn.Module: Parameters named as mmpretrain's ViT layers
        (``layers.0.0``, ``layers.1``, ``gamma2``; SwiGLU: ``w12``,
        ``w3``, ``gamma2``).
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
    raise ValueError(f'ffn_type must be one of {FFN_TYPES}, got {ffn_type!r}.')


__all__ = ['FFN_TYPES', 'build_ffn', 'swiglu_hidden_dims']
