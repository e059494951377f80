# Copyright (c) mmssl contributors. All rights reserved.
"""Multi-crop token packing for ViT backbones.

A multi-crop student sees crops of several resolutions (e.g. 2 global
crops at 224 px and 8 local crops at 96 px). Run per resolution group,
every token-wise layer (LayerNorm, qkv, output projection, MLP,
LayerScale) is called once per group. Packed, the tokens of all groups are
concatenated into one flat (S, C) tensor, ``S = sum_g B_g * T_g``; the
token-wise layers run once on it and only the attention runs per group,
with ``F.scaled_dot_product_attention`` on (B_g, heads, T_g, head_dims), as
DINOv3 does without xFormers (Siméoni et al., 2025, `DINOv3
<https://arxiv.org/abs/2508.10104>`_). The results equal the per-group
path up to float rounding. Stochastic depth stays per sample, drawn
group by group (:mod:`~mmssl.models.layers.drop_path`).
"""

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor


@dataclass(frozen=True)
class TokenGroups:
    """Layout of a packed (S, C) tensor: group g holds ``sizes[g] =
    (B_g, T_g)``, i.e. B_g samples of T_g tokens, rows in group order."""

    sizes: Tuple[Tuple[int, int], ...]

    @property
    def rows(self) -> List[int]:
        """Rows (tokens) of each group, ``B_g * T_g``."""
        return [b * t for b, t in self.sizes]

    @property
    def num_samples(self) -> int:
        return sum(b for b, _ in self.sizes)


def group_masks(xs: Sequence, masks: Optional[Sequence]) -> List:
    """One patch mask (or None) per group of crops for ``forward_packed``.

    Raises:
        ValueError: No groups, or not one mask per group.
    """
    masks = [None] * len(xs) if masks is None else list(masks)
    if len(masks) != len(xs) or not xs:
        raise ValueError(
            f'forward_packed needs one mask (or None) per group: got '
            f'{len(xs)} groups and {len(masks)} masks.'
        )
    return masks


def pack_tokens(tokens: Sequence[Tensor]) -> Tuple[Tensor, TokenGroups]:
    """Concatenate groups (B_g, T_g, C) into one (S, C) tensor."""
    groups = TokenGroups(tuple((t.shape[0], t.shape[1]) for t in tokens))
    flat = torch.cat([t.reshape(-1, t.shape[-1]) for t in tokens])
    return flat, groups  # (S, C)


def unpack_tokens(x: Tensor, groups: TokenGroups) -> List[Tensor]:
    """Split (S, C) back into one (B_g, T_g, C) tensor per group."""
    parts = x.split(groups.rows)
    return [p.view(b, t, -1) for p, (b, t) in zip(parts, groups.sizes)]


def grouped_attention(
    qkv: Tensor,
    groups: TokenGroups,
    num_heads: int,
    attend: Callable[[Tensor, Tensor, Tensor, int], Tensor],
) -> Tensor:
    """Self-attention within each group of a packed qkv tensor.

    Args:
        qkv (Tensor): Fused projections (S, 3C), rows as in ``groups``.
        groups (TokenGroups): The layout.
        num_heads (int): Attention heads.
        attend (Callable): ``attend(q, k, v, g)`` on (B_g, heads, T_g, d)
            returning (B_g, heads, T_g, d), for group index ``g``.

    Returns:
        Tensor: Attention outputs (S, C), heads concatenated per token.
    """
    C = qkv.shape[-1] // 3
    outs = []
    for g, (part, (b, t)) in enumerate(
        zip(qkv.split(groups.rows), groups.sizes)
    ):
        # (B*T, 3C) -> (3, B, heads, T, d)
        q, k, v = part.view(b, t, 3, num_heads, C // num_heads).permute(
            2, 0, 3, 1, 4
        )
        out = attend(q, k, v, g)  # (B, heads, T, d)
        outs.append(out.transpose(1, 2).reshape(b * t, C))
    return torch.cat(outs) if len(outs) > 1 else outs[0]


__all__ = [
    'TokenGroups',
    'group_masks',
    'grouped_attention',
    'pack_tokens',
    'unpack_tokens',
]
