# Copyright (c) mmssl contributors. All rights reserved.
"""Multi-head self-attention of the DINO ViT block.

Pre-norm ViT attention (Dosovitskiy et al., 2021, `An Image is Worth
16x16 Words <https://arxiv.org/abs/2010.11929>`_) with an optional
LayerScale (Touvron et al., 2021, `CaiT <https://arxiv.org/abs/2103.17239>`_)
on its output. Sub-module names are mmpretrain's ``MultiheadAttention``
(``qkv``, ``proj``, ``gamma1``), so checkpoints of mmpretrain ViTs and of
earlier mmssl versions load unchanged.
"""

from typing import Tuple

import torch
import torch.nn.functional as F
from mmpretrain.models.utils import LayerScale
from torch import Tensor, nn

from .token_packing import TokenGroups, grouped_attention


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
    """

    def __init__(
        self,
        embed_dims: int,
        num_heads: int,
        qkv_bias: bool = True,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        layer_scale_init_value: float = 0.0,
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
        self.qkv = nn.Linear(embed_dims, embed_dims * 3, bias=qkv_bias)
        self.attn_drop = attn_drop
        self.proj = nn.Linear(embed_dims, embed_dims)
        self.proj_drop = nn.Dropout(proj_drop)
        if layer_scale_init_value > 0:
            self.gamma1 = LayerScale(embed_dims, layer_scale_init_value)
        else:
            self.gamma1 = nn.Identity()

    def _qkv(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """q, k, v (B, heads, N, d) of tokens (B, N, C)."""
        B, N, _ = x.shape
        # (B, N, 3C) -> (B, N, 3, heads, d) -> 3 x (B, heads, N, d); unbind,
        # not indexing: the backward stacks three gradients instead of
        # adding into a zero (3, B, heads, N, d) tensor.
        qkv = self.qkv(x).view(B, N, 3, self.num_heads, self.head_dims)
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        return q, k, v

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, g: int = 0) -> Tensor:
        drop = self.attn_drop if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=drop)

    def _out(self, x: Tensor) -> Tensor:
        return self.gamma1(self.proj_drop(self.proj(x)))

    def forward(self, x: Tensor) -> Tensor:
        """Tokens (B, N, C) -> (B, N, C)."""
        B, N, _ = x.shape
        out = self._attend(*self._qkv(x))  # (B, heads, N, d)
        return self._out(out.transpose(1, 2).reshape(B, N, self.embed_dims))

    def forward_packed(self, x: Tensor, groups: TokenGroups) -> Tensor:
        """Packed tokens (S, C) -> (S, C), attention within each group of
        ``groups`` (:mod:`~mmssl.models.layers.token_packing`)."""
        out = grouped_attention(
            self.qkv(x), groups, self.num_heads, self._attend
        )
        return self._out(out)

    @torch.no_grad()
    def attention_map(self, x: Tensor) -> Tensor:
        """Softmax attention weights (B, heads, N, N) of tokens (B, N, C),
        computed explicitly (no dropout)."""
        q, k, _ = self._qkv(x)
        logits = (q * self.head_dims**-0.5) @ k.transpose(-2, -1)
        return logits.softmax(dim=-1)


__all__ = ['Attention']
