# Copyright (c) mmssl contributors. All rights reserved.
"""Multi-head self-attention of the ViT blocks.

Pre-norm ViT attention (Dosovitskiy et al., 2021, `An Image is Worth
16x16 Words <https://arxiv.org/abs/2010.11929>`_) with an optional
LayerScale (Touvron et al., 2021, `CaiT <https://arxiv.org/abs/2103.17239>`_)
on its output, an optional 2D RoPE on the patch tokens
(:mod:`~mmssl.models.layers.rope`) and an optional mask on the qkv bias
that zeroes its key part (DINOv3, Siméoni et al., 2025, `arXiv:2508.10104
<https://arxiv.org/abs/2508.10104>`_). Sub-module names are mmpretrain's
``MultiheadAttention`` (``qkv``, ``proj``, ``gamma1``) and DINOv3's
(``qkv.bias_mask``), so checkpoints of mmpretrain ViTs, of DINOv3 and of
earlier mmssl versions load unchanged.
"""

import contextlib
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from mmpretrain.models.utils import LayerScale
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from .rope import apply_rope
from .token_packing import TokenGroups, grouped_attention

#: RoPE sines and cosines (N, head_dims) each, or None: no RoPE.
Rope = Optional[Tuple[Tensor, Tensor]]

#: Attention kernels that need no per-shape plan (no cuDNN attention).
_PLAN_FREE_ATTENTION = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
)


def plan_free_attention(x: Tensor):
    """Context for attention whose batch size changes at almost every call
    (a random subset of samples under stochastic depth).

    cuDNN's attention (which ``scaled_dot_product_attention`` picks for
    bf16 on recent GPUs) builds an execution plan per new shape, about 12
    ms of host time each: on an H200 that made the bf16 ViT-S/14
    forward+backward with drop path 0.4 ten times slower than with fixed
    shapes. Flash and memory-efficient attention need no plan, so they are
    used instead on CUDA; elsewhere nothing changes.
    """
    if not x.is_cuda:
        return contextlib.nullcontext()
    return sdpa_kernel(list(_PLAN_FREE_ATTENTION))


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
        self.register_buffer('bias_mask', torch.ones(out_features))
        self.reset_mask()

    def reset_mask(self) -> None:
        """1 for the query and value parts, 0 for the key part."""
        third = self.out_features // 3
        self.bias_mask.fill_(1)
        self.bias_mask[third : 2 * third] = 0

    def forward(self, x: Tensor) -> Tensor:
        bias = self.bias * self.bias_mask.to(self.bias.dtype)
        return F.linear(x, self.weight, bias)


class Attention(nn.Module):
    """Self-attention (B, N, C) -> (B, N, C), LayerScale included.

    Args:
        embed_dims (int): Token width C.
        num_heads (int): Heads; ``C // num_heads`` channels each.
        qkv_bias (bool): Bias of the fused qkv projection. Defaults to True.
        attn_drop (float): Dropout on the attention weights (training
            only). Defaults to 0.
        proj_drop (float): Dropout after the output projection. Defaults
            to 0.
        layer_scale_init_value (float): LayerScale init; 0 disables it.
            Defaults to 0.
        mask_k_bias (bool): Zero the key part of the qkv bias through the
            ``qkv.bias_mask`` buffer (with ``qkv_bias``). Defaults to
            False.
    """

    def __init__(
        self,
        embed_dims: int,
        num_heads: int,
        qkv_bias: bool = True,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        layer_scale_init_value: float = 0.0,
        mask_k_bias: bool = False,
    ) -> None:
        super().__init__()
        if embed_dims % num_heads:
            raise ValueError(
                f'embed_dims {embed_dims} is not a multiple of num_heads '
                f'{num_heads}.'
            )
        self.embed_dims = embed_dims
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        if qkv_bias and mask_k_bias:
            self.qkv = MaskedBiasLinear(embed_dims, embed_dims * 3)
        else:
            self.qkv = nn.Linear(embed_dims, embed_dims * 3, bias=qkv_bias)
        self.attn_drop = attn_drop
        self.proj = nn.Linear(embed_dims, embed_dims)
        self.proj_drop = nn.Dropout(proj_drop)
        if layer_scale_init_value > 0:
            self.gamma1 = LayerScale(embed_dims, layer_scale_init_value)
        else:
            self.gamma1 = nn.Identity()

    def _qkv(self, x: Tensor, rope: Rope) -> Tuple[Tensor, Tensor, Tensor]:
        """q, k, v (B, heads, N, d) of tokens (B, N, C), RoPE on q, k."""
        B, N, _ = x.shape
        # (B, N, 3C) -> (B, N, 3, heads, d) -> 3 x (B, heads, N, d); unbind,
        # not indexing: the backward stacks three gradients instead of
        # adding into a zero (3, B, heads, N, d) tensor.
        qkv = self.qkv(x).view(B, N, 3, self.num_heads, self.head_dims)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        return (*_rotate(q, k, rope), v)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        drop = self.attn_drop if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop)

    def _out(self, x: Tensor) -> Tensor:
        return self.gamma1(self.proj_drop(self.proj(x)))

    def forward(
        self,
        x: Tensor,
        groups: Optional[TokenGroups] = None,
        ropes: Optional[Sequence[Rope]] = None,
    ) -> Tensor:
        """Tokens (B, N, C) -> (B, N, C), or with ``groups`` packed tokens
        (S, C) -> (S, C), attention within each group
        (:mod:`~mmssl.models.layers.token_packing`); ``ropes[g]`` is the
        RoPE of group g (None: no RoPE) and rotates its last tokens (the
        patches)."""
        shape = x.shape
        if groups is None:  # (B, N, C): one group of B samples
            groups = TokenGroups(((shape[0], shape[1]),))
            x = x.reshape(-1, shape[-1])  # (B*N, C)

        def attend(q: Tensor, k: Tensor, v: Tensor, g: int) -> Tensor:
            rope = None if ropes is None else ropes[g]
            return self._attend(*_rotate(q, k, rope), v)

        out = grouped_attention(self.qkv(x), groups, self.num_heads, attend)
        return self._out(out).view(shape)

    @torch.no_grad()
    def attention_map(self, x: Tensor, rope: Rope = None) -> Tensor:
        """Softmax attention weights (B, heads, N, N) of tokens (B, N, C),
        computed explicitly (no dropout)."""
        q, k, _ = self._qkv(x, rope)
        logits = (q * self.head_dims**-0.5) @ k.transpose(-2, -1)
        return logits.softmax(dim=-1)


def _rotate(q: Tensor, k: Tensor, rope: Rope) -> Tuple[Tensor, Tensor]:
    """Queries and keys (B, heads, T, d) with ``rope`` applied."""
    if rope is None:
        return q, k
    sin, cos = rope
    return apply_rope(q, sin, cos), apply_rope(k, sin, cos)


__all__ = ['Attention', 'MaskedBiasLinear', 'Rope', 'plan_free_attention']
