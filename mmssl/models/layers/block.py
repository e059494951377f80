# Copyright (c) mmssl contributors. All rights reserved.
"""The pre-norm ViT block of DINO, iBOT and DINOv2, with stochastic depth
that runs each residual branch on the kept samples only."""

from typing import Optional

import torch
from mmengine.model import BaseModule
from mmpretrain.models.utils import build_norm_layer
from torch import Tensor, nn

from .attention import Attention
from .drop_path import check_drop_path_mode, drop_add_residual
from .ffn import build_ffn
from .token_packing import Keep, TokenGroups, packed_residual


class DINOBlock(BaseModule):
    """``x + attn(ln1(x))``, then ``x + ffn(ln2(x))``, each branch under
    stochastic depth (Huang et al., 2016, `arXiv:1603.09382
    <https://arxiv.org/abs/1603.09382>`_).

    The sub-modules and state-dict keys are those of mmpretrain's
    ``TransformerEncoderLayer`` (``ln1``, ``attn``, ``ln2``, ``ffn``).
    Each residual branch runs on the samples stochastic depth keeps and
    is added back at their rows
    (:func:`~mmssl.models.layers.drop_path.drop_add_residual`). The same
    block runs packed tokens of several crop sizes
    (``forward(x, groups, keep_attn, keep_ffn)``), so a compiled block
    (``nn.Module.compile``) compiles both paths.

    Stochastic depth acts while the block is in training mode and autograd
    records: a forward without gradients (the EMA teacher, feature
    extraction) runs every branch on every sample, unscaled.

    Args:
        embed_dims (int): Token width C.
        num_heads (int): Attention heads.
        feedforward_channels (int): FFN hidden width.
        drop_path_rate (float): This block's stochastic depth rate, in
            [0, 1). Defaults to 0.
        drop_path_mode (str): Which samples are kept, one of
            :data:`~mmssl.models.layers.drop_path.DROP_PATH_MODES`.
            Defaults to ``'bernoulli'``.
        layer_scale_init_value (float): LayerScale init; 0 disables it.
            Defaults to 0.
        drop_rate (float): Dropout after the attention projection and in
            the MLP. Defaults to 0.
        attn_drop_rate (float): Dropout on the attention weights.
            Defaults to 0.
        qkv_bias (bool): Bias of the qkv projection. Defaults to True.
        ffn_type (str): ``'origin'`` (MLP) or ``'swiglu_fused'``.
        num_fcs (int): MLP layers. Defaults to 2.
        act_cfg (dict): MLP activation. Defaults to GELU.
        norm_cfg (dict): The two norms. Defaults to LayerNorm.
        init_cfg (dict, optional): mmengine initialisation config.
    """

    def __init__(
        self,
        embed_dims: int,
        num_heads: int,
        feedforward_channels: int,
        drop_path_rate: float = 0.0,
        drop_path_mode: str = 'bernoulli',
        layer_scale_init_value: float = 0.0,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        qkv_bias: bool = True,
        ffn_type: str = 'origin',
        num_fcs: int = 2,
        act_cfg: dict = dict(type='GELU'),
        norm_cfg: dict = dict(type='LN'),
        init_cfg: Optional[dict] = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        if not 0.0 <= drop_path_rate < 1.0:
            raise ValueError(
                f'drop_path_rate must be in [0, 1), got {drop_path_rate}.'
            )
        self.embed_dims = embed_dims
        self.drop_path_rate = float(drop_path_rate)
        self.drop_path_mode = check_drop_path_mode(drop_path_mode)
        self.ln1 = build_norm_layer(norm_cfg, embed_dims)
        self.attn = Attention(
            embed_dims,
            num_heads,
            qkv_bias=qkv_bias,
            attn_drop=attn_drop_rate,
            proj_drop=drop_rate,
            layer_scale_init_value=layer_scale_init_value,
        )
        self.ln2 = build_norm_layer(norm_cfg, embed_dims)
        self.ffn = build_ffn(
            ffn_type,
            embed_dims,
            feedforward_channels,
            drop_rate=drop_rate,
            act_cfg=act_cfg,
            layer_scale_init_value=layer_scale_init_value,
            num_fcs=num_fcs,
        )

    def init_weights(self) -> None:
        """mmpretrain's ViT layer init: FFN weights Xavier-uniform, biases
        normal(1e-6)."""
        super().init_weights()
        for m in self.ffn.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)

    def drop_rate_now(self) -> float:
        """The stochastic depth rate in effect: ``drop_path_rate`` in
        training mode with autograd recording, else 0."""
        if self.training and torch.is_grad_enabled():
            return self.drop_path_rate
        return 0.0

    def attn_residual(self, x: Tensor) -> Tensor:
        """Attention branch (B, N, C) -> (B, N, C), LayerScale included."""
        return self.attn(self.ln1(x))

    def ffn_residual(self, x: Tensor) -> Tensor:
        """FFN branch (..., C) -> (..., C), LayerScale included."""
        return self.ffn(self.ln2(x))

    def forward(
        self,
        x: Tensor,
        groups: Optional[TokenGroups] = None,
        keep_attn: Keep = None,
        keep_ffn: Keep = None,
    ) -> Tensor:
        """Tokens (B, N, C) -> (B, N, C); with ``groups``, packed tokens
        (S, C) -> (S, C) whose kept samples per branch the caller drew
        (:func:`~mmssl.models.layers.token_packing.draw_keep`)."""
        if groups is not None:
            return self._forward_packed(x, groups, keep_attn, keep_ffn)
        p, mode = self.drop_rate_now(), self.drop_path_mode
        x = drop_add_residual(x, self.attn_residual, p, True, mode=mode)
        return drop_add_residual(x, self.ffn_residual, p, True, mode=mode)

    def _forward_packed(
        self, x: Tensor, groups: TokenGroups, keep_attn: Keep, keep_ffn: Keep
    ) -> Tensor:
        def attn(t: Tensor, grp: TokenGroups) -> Tensor:
            return self.attn.forward_packed(self.ln1(t), grp)

        def ffn(t: Tensor, grp: TokenGroups) -> Tensor:
            return self.ffn_residual(t)

        x = packed_residual(x, attn, groups, keep_attn)
        return packed_residual(x, ffn, groups, keep_ffn)

    def extra_repr(self) -> str:
        text = f'drop_path_rate={self.drop_path_rate:g}'
        if self.drop_path_mode != 'bernoulli':
            text += f', drop_path_mode={self.drop_path_mode!r}'
        return text


__all__ = ['DINOBlock']
