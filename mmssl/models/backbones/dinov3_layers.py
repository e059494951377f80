# Copyright (c) mmssl contributors. All rights reserved.
"""Transformer block of the DINOv3 ViT: RoPE attention, masked K-bias,
LayerScale, MLP or SwiGLU FFN (Siméoni et al., 2025, `DINOv3
<https://arxiv.org/abs/2508.10104>`_).

Module and parameter names follow the released checkpoints inside a block
(``attn.qkv``, ``attn.qkv.bias_mask``, ``ls1.gamma``, ``ffn.fc1`` /
``ffn.w1``...), so the key maps in :mod:`mmssl.checkpoint.layouts.dinov3`
stay short.
"""

from typing import Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmcv.cnn.bricks.drop import DropPath
from torch import Tensor

from mmssl.models.layers.drop_path import (
    check_drop_path_mode,
    drop_add_residual,
)
from mmssl.models.utils.rope import apply_rope

Rope = Optional[Tuple[Tensor, Tensor]]


def swiglu_hidden_dims(hidden: int, align: int = 8) -> int:
    """SwiGLU width: ``2/3`` of the MLP width rounded up to ``align``."""
    d = int(hidden * 2 / 3)
    return d + (-d % align)


class MaskedBiasLinear(nn.Linear):
    """``nn.Linear`` whose bias is multiplied by a fixed ``bias_mask``.

    The released DINOv3 models zero the key part of the fused qkv bias
    this way (``mask_k_bias``): ``bias_mask`` is 1 for queries and values,
    0 for keys. It is a buffer, so checkpoints carry it as they do.
    """

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(in_features, out_features, bias=True)
        if out_features % 3:
            raise ValueError('a masked qkv bias needs 3 equal parts.')
        mask = torch.ones(out_features)
        third = out_features // 3
        mask[third : 2 * third] = 0
        self.register_buffer('bias_mask', mask)

    def forward(self, x: Tensor) -> Tensor:
        bias = self.bias * self.bias_mask.to(self.bias.dtype)
        return F.linear(x, self.weight, bias)


class RoPEAttention(nn.Module):
    """Multi-head self-attention with 2D RoPE on the patch tokens.

    Args:
        embed_dims (int): Token width C.
        num_heads (int): Heads; ``C / num_heads`` must be a multiple of 4.
        qkv_bias (bool): Bias on the fused qkv projection.
        mask_k_bias (bool): Zero the key part of that bias (needs
            ``qkv_bias``).
        proj_bias (bool): Bias on the output projection.
    """

    def __init__(
        self,
        embed_dims: int,
        num_heads: int,
        qkv_bias: bool = True,
        mask_k_bias: bool = True,
        proj_bias: bool = True,
    ) -> None:
        super().__init__()
        if embed_dims % num_heads:
            raise ValueError(f'{num_heads} heads do not divide {embed_dims}.')
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        if qkv_bias and mask_k_bias:
            self.qkv = MaskedBiasLinear(embed_dims, 3 * embed_dims)
        else:
            self.qkv = nn.Linear(embed_dims, 3 * embed_dims, bias=qkv_bias)
        self.proj = nn.Linear(embed_dims, embed_dims, bias=proj_bias)

    def _qkv(self, x: Tensor, rope: Rope) -> Tuple[Tensor, Tensor, Tensor]:
        B, T, C = x.shape
        # (B, T, 3C) -> (3, B, heads, T, head_dims)
        qkv = self.qkv(x).reshape(B, T, 3, self.num_heads, self.head_dims)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        if rope is not None:
            sin, cos = rope
            q, k = apply_rope(q, sin, cos), apply_rope(k, sin, cos)
        return q, k, v

    def forward(self, x: Tensor, rope: Rope = None) -> Tensor:
        """Tokens (B, T, C) -> (B, T, C); RoPE on the last N tokens."""
        B, T, C = x.shape
        q, k, v = self._qkv(x, rope)
        out = F.scaled_dot_product_attention(q, k, v)  # (B, h, T, d)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))

    def attention_map(self, x: Tensor, rope: Rope = None) -> Tensor:
        """Softmax attention (B, heads, T, T), computed explicitly."""
        q, k, _ = self._qkv(x, rope)
        logits = (q * self.head_dims**-0.5) @ k.transpose(-2, -1)
        return logits.softmax(dim=-1)


class LayerScale(nn.Module):
    """Per-channel residual scale ``x * gamma`` (Touvron et al., 2021)."""

    def __init__(self, dims: int, init_value: float = 1e-5) -> None:
        super().__init__()
        self.init_value = init_value
        self.gamma = nn.Parameter(torch.full((dims,), float(init_value)))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class Mlp(nn.Module):
    """``fc2(gelu(fc1(x)))``."""

    def __init__(self, dims: int, hidden: int, bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dims, hidden, bias=bias)
        self.fc2 = nn.Linear(hidden, dims, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class SwiGLUFFN(nn.Module):
    """``w3(silu(w1(x)) * w2(x))`` (Shazeer, 2020), hidden width aligned."""

    def __init__(
        self, dims: int, hidden: int, bias: bool = True, align: int = 8
    ) -> None:
        super().__init__()
        width = swiglu_hidden_dims(hidden, align)
        self.w1 = nn.Linear(dims, width, bias=bias)
        self.w2 = nn.Linear(dims, width, bias=bias)
        self.w3 = nn.Linear(width, dims, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.w3(F.silu(self.w1(x)) * self.w2(x))


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` convolution; remainders are cut."""

    def __init__(self, in_channels: int, embed_dims: int, patch_size: int):
        super().__init__()
        self.patch_size = patch_size
        self.projection = nn.Conv2d(
            in_channels, embed_dims, patch_size, stride=patch_size
        )

    def forward(self, x: Tensor) -> Tuple[Tensor, Tuple[int, int]]:
        x = self.projection(x)  # (B, C, Hp, Wp)
        grid = (x.shape[2], x.shape[3])
        return x.flatten(2).transpose(1, 2), grid  # (B, Hp*Wp, C)


class DINOv3Block(nn.Module):
    """Pre-norm block ``x + ls1(attn(ln1(x)))``, ``x + ls2(ffn(ln2(x)))``.

    Args:
        embed_dims (int): Token width.
        num_heads (int): Attention heads.
        feedforward_channels (int): MLP width (SwiGLU: before the 2/3 rule).
        ffn_type (str): ``'mlp'`` or ``'swiglu'``. Defaults to ``'mlp'``.
        swiglu_align (int): SwiGLU width alignment. Defaults to 8.
        layer_scale_init_value (float): LayerScale init; 0 disables it.
        drop_path_rate (float): Stochastic depth of both branches.
        drop_path_mode (str): ``'bernoulli'`` (mmcv's ``DropPath``: every
            sample computed, dropped ones zeroed) or a fixed-count mode of
            :mod:`mmssl.models.layers.drop_path` (``'fixed'``,
            ``'fixed_stochastic'``: branches run on the kept samples only).
        norm_eps (float): LayerNorm epsilon (released models: 1e-5).
        qkv_bias, mask_k_bias, proj_bias, ffn_bias (bool): Biases.
    """

    def __init__(
        self,
        embed_dims: int,
        num_heads: int,
        feedforward_channels: int,
        ffn_type: str = 'mlp',
        swiglu_align: int = 8,
        layer_scale_init_value: float = 1e-5,
        drop_path_rate: float = 0.0,
        drop_path_mode: str = 'bernoulli',
        norm_eps: float = 1e-5,
        qkv_bias: bool = True,
        mask_k_bias: bool = True,
        proj_bias: bool = True,
        ffn_bias: bool = True,
    ) -> None:
        super().__init__()
        if ffn_type not in ('mlp', 'swiglu'):
            raise ValueError(f"ffn_type must be 'mlp' or 'swiglu': {ffn_type}")
        self.ln1 = nn.LayerNorm(embed_dims, eps=norm_eps)
        self.attn = RoPEAttention(
            embed_dims, num_heads, qkv_bias, mask_k_bias, proj_bias
        )
        self.ln2 = nn.LayerNorm(embed_dims, eps=norm_eps)
        if ffn_type == 'mlp':
            self.ffn = Mlp(embed_dims, feedforward_channels, ffn_bias)
        else:
            self.ffn = SwiGLUFFN(
                embed_dims, feedforward_channels, ffn_bias, swiglu_align
            )
        if layer_scale_init_value > 0:
            self.ls1 = LayerScale(embed_dims, layer_scale_init_value)
            self.ls2 = LayerScale(embed_dims, layer_scale_init_value)
        else:
            self.ls1 = self.ls2 = nn.Identity()
        self.drop_path = (
            DropPath(drop_path_rate) if drop_path_rate > 0 else nn.Identity()
        )
        self.drop_path_mode = check_drop_path_mode(drop_path_mode)

    def compile(self, **kwargs) -> None:
        """``nn.Module.compile`` of the whole block, keeping ``kwargs``
        for the packed path (``forward_packed`` compiles its branches with
        them)."""
        self.compile_kwargs = dict(kwargs)
        super().compile(**kwargs)

    def forward(self, x: Tensor, rope: Rope = None) -> Tensor:
        """Tokens (B, 1 + R + N, C) -> same; ``rope`` = (sin, cos)."""
        if self.drop_path_mode == 'bernoulli' or not self.training:
            x = x + self.drop_path(self.ls1(self.attn(self.ln1(x), rope)))
            return x + self.drop_path(self.ls2(self.ffn(self.ln2(x))))
        p = getattr(self.drop_path, 'drop_prob', 0.0)
        mode = self.drop_path_mode

        def attn(t: Tensor) -> Tensor:
            return self.ls1(self.attn(self.ln1(t), rope))

        def ffn(t: Tensor) -> Tensor:
            return self.ls2(self.ffn(self.ln2(t)))

        x = drop_add_residual(x, attn, p, True, mode=mode)
        return drop_add_residual(x, ffn, p, True, mode=mode)


__all__ = [
    'DINOv3Block',
    'LayerScale',
    'MaskedBiasLinear',
    'Mlp',
    'PatchEmbed',
    'RoPEAttention',
    'SwiGLUFFN',
    'swiglu_hidden_dims',
]
