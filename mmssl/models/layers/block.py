# Copyright (c) mmssl contributors. All rights reserved.
"""The pre-norm ViT block of DINO, iBOT, DINOv2 and DINOv3, with
stochastic depth that runs each residual branch on the kept samples
only."""

from typing import Optional, Sequence, Tuple

import torch
from mmengine.model import BaseModule
from mmpretrain.models.utils import build_norm_layer
from torch import Tensor, nn

from .attention import Attention, Rope
from .drop_path import Keep, check_drop_path_mode, draw_keep, packed_residual
from .ffn import MMPRETRAIN_FFN_TYPES, build_ffn
from .layer_scale import LayerScale
from .token_packing import TokenGroups

#: Kept samples of the attention branch, then of the FFN branch.
Keeps = Tuple[Keep, Keep]


class DINOBlock(BaseModule):
    """``x + attn(ln1(x))``, then ``x + ffn(ln2(x))``, each branch under
    stochastic depth (Huang et al., 2016, `arXiv:1603.09382
    <https://arxiv.org/abs/1603.09382>`_).

    The sub-modules and state-dict keys are those of mmpretrain's
    ``TransformerEncoderLayer`` (``ln1``, ``attn``, ``ln2``, ``ffn``, the
    LayerScales ``attn.gamma1`` and ``ffn.gamma2``), or with a DINOv3 FFN
    type (``'mlp'``, ``'swiglu'``) those of DINOv3's block, whose
    LayerScales ``ls1`` and ``ls2`` sit in the block. The attention takes
    a 2D RoPE per group (``ropes``, DINOv3).
    Each residual branch runs on the samples stochastic depth keeps and
    is added back at their rows (:mod:`~mmssl.models.layers.drop_path`).
    The tokens of one crop size (B, N, C) are run as one group of the
    packed path (:mod:`~mmssl.models.layers.token_packing`), so one code
    path serves both, and a compiled block (``nn.Module.compile``)
    compiles both. The backbone draws the kept samples
    (:meth:`draw_keeps`) outside the block: a compiled block then sees
    fixed shapes and no per-block constant.

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
        ffn_type (str): ``'origin'`` (MLP) or ``'swiglu_fused'`` in
            mmpretrain's layout, ``'mlp'`` or ``'swiglu'`` in DINOv3's
            (:mod:`~mmssl.models.layers.ffn`). Defaults to ``'origin'``.
        num_fcs (int): MLP layers (``'origin'``). Defaults to 2.
        act_cfg (dict): MLP activation (``'origin'``). Defaults to GELU.
        swiglu_align (int): SwiGLU width alignment (``'swiglu'``).
            Defaults to 8.
        mask_k_bias (bool): Zero the key part of the qkv bias (DINOv3).
            Defaults to False.
        keep_rule (str): How ``'bernoulli'`` draws its kept samples from
            uniform numbers u: ``'below'`` (u < 1 - p) or ``'floor'``
            (mmcv's ``DropPath``: floor(1 - p + u) = 1, u in the tokens'
            dtype; the DINOv3 ViT's, so a seed keeps what it kept
            before). Defaults to ``'below'``.
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
        swiglu_align: int = 8,
        mask_k_bias: bool = False,
        keep_rule: str = 'below',
        norm_cfg: dict = dict(type='LN'),
        init_cfg: Optional[dict] = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        if not 0.0 <= drop_path_rate < 1.0:
            raise ValueError(
                f'drop_path_rate must be in [0, 1), got {drop_path_rate}.'
            )
        if keep_rule not in ('below', 'floor'):
            raise ValueError(
                f"keep_rule must be 'below' or 'floor': {keep_rule}"
            )
        self.embed_dims = embed_dims
        self.drop_path_rate = float(drop_path_rate)
        self.drop_path_mode = check_drop_path_mode(drop_path_mode)
        self.keep_rule = keep_rule
        self.ffn_type = ffn_type
        # mmpretrain's layout scales inside attn and ffn, DINOv3's here.
        inner = ffn_type in MMPRETRAIN_FFN_TYPES
        inner_scale = layer_scale_init_value if inner else 0.0
        self.ln1 = build_norm_layer(norm_cfg, embed_dims)
        self.attn = Attention(
            embed_dims,
            num_heads,
            qkv_bias=qkv_bias,
            attn_drop=attn_drop_rate,
            proj_drop=drop_rate,
            layer_scale_init_value=inner_scale,
            mask_k_bias=mask_k_bias,
        )
        self.ln2 = build_norm_layer(norm_cfg, embed_dims)
        self.ffn = build_ffn(
            ffn_type,
            embed_dims,
            feedforward_channels,
            drop_rate=drop_rate,
            act_cfg=act_cfg,
            layer_scale_init_value=inner_scale,
            num_fcs=num_fcs,
            swiglu_align=swiglu_align,
        )
        self.ls1 = self.ls2 = nn.Identity()
        if not inner and layer_scale_init_value > 0:
            self.ls1 = LayerScale(embed_dims, layer_scale_init_value)
            self.ls2 = LayerScale(embed_dims, layer_scale_init_value)

    def init_weights(self) -> None:
        """mmpretrain's ViT layer init in its layout: FFN weights
        Xavier-uniform, biases normal(1e-6). The DINOv3 layout draws
        nothing here (its backbone initialises every layer)."""
        super().init_weights()
        if self.ffn_type not in MMPRETRAIN_FFN_TYPES:
            return
        for m in self.ffn.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)

    def compile(self, **kwargs) -> None:
        """``nn.Module.compile`` of the whole block, kept across copies.

        torch drops a module's compiled call when it is copied; the
        block keeps ``kwargs`` and compiles its copy again, so the EMA
        teacher (a deep copy of the student) runs compiled with its own
        weights.
        """
        self.compile_kwargs = dict(kwargs)
        super().compile(**kwargs)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if state.get('compile_kwargs') is not None:
            super().compile(**state['compile_kwargs'])

    def drop_rate_now(self) -> float:
        """The stochastic depth rate in effect: ``drop_path_rate`` in
        training mode with autograd recording, else 0."""
        if self.training and torch.is_grad_enabled():
            return self.drop_path_rate
        return 0.0

    def draw_keeps(
        self,
        groups: TokenGroups,
        x: Tensor,
        generators: Optional[Sequence[Optional[torch.Generator]]] = None,
    ) -> Keeps:
        """Which samples of each group run the attention branch, then the
        FFN branch, drawn as ``drop_path_mode`` says (None: all, unscaled).

        Drawn apart from :meth:`forward` so that a compiled block sees
        only tensors of fixed shape (``'static'``: one graph whatever the
        block's rate) and an activation-checkpointed block replays them.
        """
        p, mode, rule = (
            self.drop_rate_now(),
            self.drop_path_mode,
            self.keep_rule,
        )
        gens = generators
        return tuple(
            draw_keep(groups, p, rule, x.device, x.dtype, gens, mode)
            for _ in range(2)  # attention branch, then FFN branch
        )

    def forward(
        self,
        x: Tensor,
        groups: Optional[TokenGroups] = None,
        keeps: Optional[Keeps] = None,
        ropes: Optional[Sequence[Rope]] = None,
    ) -> Tensor:
        """Tokens (B, N, C) -> (B, N, C), or with ``groups`` packed tokens
        (S, C) -> (S, C) (:mod:`~mmssl.models.layers.token_packing`).

        ``keeps`` are the kept samples of :meth:`draw_keeps`; None draws
        them here. ``ropes`` holds per group the RoPE (sin, cos) of its
        patch tokens, or None (no RoPE).
        """
        shape = x.shape
        if groups is None:  # (B, N, C): one group of B samples
            groups = TokenGroups(((shape[0], shape[1]),))
            x = x.reshape(-1, shape[-1])  # (B*N, C)
        if keeps is None:
            keeps = self.draw_keeps(groups, x)
        keep_attn, keep_ffn = keeps

        def attn(t: Tensor, grp: TokenGroups) -> Tensor:
            return self.ls1(self.attn(self.ln1(t), grp, ropes))

        def ffn(t: Tensor, grp: TokenGroups) -> Tensor:
            return self.ls2(self.ffn(self.ln2(t)))

        x = packed_residual(x, attn, groups, keep_attn)
        x = packed_residual(x, ffn, groups, keep_ffn)
        return x.view(shape)

    def extra_repr(self) -> str:
        text = f'drop_path_rate={self.drop_path_rate:g}'
        if self.drop_path_mode != 'bernoulli':
            text += f', drop_path_mode={self.drop_path_mode!r}'
        if self.keep_rule != 'below':
            text += f', keep_rule={self.keep_rule!r}'
        return text


__all__ = ['DINOBlock']
