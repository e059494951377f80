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
path up to float rounding.

Stochastic depth stays per sample: each sample belongs to one group, its
keep decision is drawn with the same convention and in the same per-group
order as the block's own forward, and a residual branch runs only on the
tokens of the kept samples.
"""

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .drop_path import (
    generator_kwargs,
    keep_count,
    keep_indices,
    static_draws,
    static_keep,
    subset_attention_backends,
)

Keep = Optional[List['GroupKeep']]  # one entry per group, or None


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


def _kept_rows(
    groups: TokenGroups, keep: List['GroupKeep']
) -> Tuple[Tensor, TokenGroups]:
    """Row indices of the kept samples' tokens and their layout."""
    rows, sizes, start = [], [], 0
    for (b, t), k in zip(groups.sizes, keep):
        idx = k.idx
        if idx is None:
            idx = torch.arange(b, device=k.device)
        base = start + idx * t  # first row of each kept sample
        arange = torch.arange(t, device=base.device)
        rows.append((base[:, None] + arange[None, :]).reshape(-1))
        sizes.append((idx.shape[0], t))  # k, symbolic if traced so
        start += b * t
    return torch.cat(rows), TokenGroups(tuple(sizes))


def packed_residual(
    x: Tensor,
    branch: Callable[[Tensor, TokenGroups], Tensor],
    groups: TokenGroups,
    keep: Keep,
) -> Tensor:
    """``x + drop_path(branch(x))`` on packed tokens, kept samples only.

    Args:
        x (Tensor): Packed tokens (S, C).
        branch (Callable): ``branch(tokens, layout)`` -> same shape.
        groups (TokenGroups): The layout of ``x``.
        keep (list[GroupKeep], optional): Per group, which samples keep
            the branch and its scale; None: all do, unscaled (evaluation,
            no drop path).

    Returns:
        Tensor: (S, C); dropped samples' rows are ``x`` unchanged.
    """
    if keep is None:
        return x + branch(x, groups)
    if keep[0].weight is not None:
        return _weighted_residual(x, branch, groups, keep)
    scales = [k.scale for k in keep]
    same_scale = len(set(scales)) == 1
    if same_scale and all(k.idx is None for k in keep):
        return torch.add(x, branch(x, groups), alpha=scales[0])
    # An empty subset still runs the branch (on zero rows) so that every
    # parameter stays in the graph, as DDP needs.
    rows, kept = _kept_rows(groups, keep)
    with subset_attention_backends(x):
        residual = branch(x.index_select(0, rows), kept).to(x.dtype)
    if same_scale:
        return torch.index_add(x, 0, rows, residual, alpha=scales[0])
    # Fixed-count modes: group g's branch is scaled by B_g / k_g.
    per_row = torch.cat(
        [x.new_full((r, 1), s) for r, s in zip(kept.rows, scales)]
    )  # (S_kept, 1)
    return torch.index_add(x, 0, rows, residual * per_row)


def _weighted_residual(
    x: Tensor,
    branch: Callable[[Tensor, TokenGroups], Tensor],
    groups: TokenGroups,
    keep: List['GroupKeep'],
) -> Tensor:
    """``packed_residual`` of the ``'static'`` mode: per kept sample a
    weight (k_g,) on the device, broadcast to its T_g rows."""
    if len(keep) == 1:  # one group: gather whole samples, 3 kernels
        (b, t), k = groups.sizes[0], keep[0]
        samples = x.view(b, t, -1)
        kept = samples.index_select(0, k.idx)  # (k, T, C)
        residual = branch(
            kept.view(-1, x.shape[-1]), TokenGroups(((k.count, t),))
        )
        weighted = residual.view(k.count, t, -1) * k.weight[:, None, None]
        return torch.index_add(samples, 0, k.idx, weighted.to(x.dtype)).view(
            x.shape
        )
    if keep[0].rows is not None:  # rows drawn with the samples
        rows = torch.cat([k.rows for k in keep])
        per_row = torch.cat([k.row_weight for k in keep])
        kept = TokenGroups(
            tuple((k.count, t) for k, (_, t) in zip(keep, groups.sizes))
        )
    else:
        rows, kept = _kept_rows(groups, keep)
        per_row = torch.cat(
            [
                k.weight.repeat_interleave(t)
                for k, (_, t) in zip(keep, kept.sizes)
            ]
        )  # (S_kept,)
    residual = branch(x.index_select(0, rows), kept)  # (S_kept, C)
    weighted = residual * per_row[:, None]
    return torch.index_add(x, 0, rows, weighted.to(x.dtype))


def draw_static_keeps(
    groups: TokenGroups,
    rates: Sequence[float],
    device: torch.device,
    generators: Optional[Sequence[Optional[torch.Generator]]] = None,
) -> List[Keep]:
    """The ``'static'`` keeps of many residual branches (a whole backbone's)
    in a few kernels per group (:func:`~mmssl.models.layers.drop_path.
    static_draws`).

    Args:
        groups (TokenGroups): The layout; group g draws for B_g samples.
        rates (Sequence[float]): Per branch its drop rate; 0 gives None
            (every sample, unscaled).
        device (torch.device): Where to draw.
        generators (Sequence, optional): One generator per group (None
            entries, or None: the global RNG).

    Returns:
        list[Keep]: Per branch, None or one :class:`GroupKeep` per group;
        with several groups each also holds its token rows and their
        weights, so a branch gathers all groups' tokens in one call.
    """
    active = [i for i, p in enumerate(rates) if p > 0.0]
    keeps: List[Keep] = [None] * len(rates)
    if not active:
        return keeps
    gens = list(generators) if generators else [None] * len(groups.sizes)
    packed = len(groups.sizes) > 1
    for i in active:
        keeps[i] = []
    start = 0
    for (b, t), gen in zip(groups.sizes, gens):
        order, weight, counts = static_draws(
            b, [rates[i] for i in active], device, gen
        )
        if packed:  # (n, B, T): each sample's token rows and weight
            tokens = torch.arange(t, device=order.device)
            rows = (order * t + start)[:, :, None] + tokens
            row_weight = weight[:, :, None].expand(-1, -1, t).contiguous()
        for j, (i, k) in enumerate(zip(active, counts)):
            extra = (
                (rows[j, :k].view(-1), row_weight[j, :k].view(-1))
                if packed
                else ()
            )
            keeps[i].append(
                GroupKeep(order[j, :k], k, 1.0, device, weight[j, :k], *extra)
            )
        start += b * t
    return keeps


@dataclass(frozen=True)
class GroupKeep:
    """The samples of one group that keep a residual branch.

    Attributes:
        idx (Tensor, optional): Kept sample indices (k,); None: all.
        count (int): k, known on the host.
        scale (float): Scale of the kept branches (``1 / keep_prob`` or
            ``B / k``).
        device (torch.device): Where the indices live.
        weight (Tensor, optional): Per kept sample (k,) the weight of its
            branch, drawn on the device (``'static'`` mode; ``scale`` is
            then unused).
        rows (Tensor, optional): The packed rows of the kept samples'
            tokens (k * T,), offset by the group's first row.
        row_weight (Tensor, optional): ``weight`` per row (k * T,).
    """

    idx: Optional[Tensor]
    count: int
    scale: float
    device: torch.device
    weight: Optional[Tensor] = None
    rows: Optional[Tensor] = None
    row_weight: Optional[Tensor] = None


def draw_keep(
    groups: TokenGroups,
    drop_prob: float,
    rule: str,
    device: torch.device,
    dtype: torch.dtype,
    generators: Optional[Sequence[Optional[torch.Generator]]] = None,
    mode: str = 'bernoulli',
) -> Keep:
    """Per-sample keep decisions of one residual branch, group by group.

    Args:
        groups (TokenGroups): The layout; group g draws B_g numbers.
        drop_prob (float): Drop probability; 0 gives None (keep all).
        rule (str): For ``mode='bernoulli'``: ``'below'``: kept where
            ``u < 1 - p``; ``'floor'``: kept where
            ``floor(1 - p + u) == 1`` with ``u`` in ``dtype`` (mmcv's
            ``DropPath``). The same draws as the block's
            own forward give the same decisions.
        device (torch.device): Where to draw.
        dtype (torch.dtype): The tokens' dtype (``'floor'`` draws in it).
        generators (Sequence, optional): One generator per group (None
            entries, or None: the global RNG).
        mode (str): ``'bernoulli'``, ``'static'`` (per group
            :func:`~mmssl.models.layers.drop_path.static_keep`) or a
            fixed-count mode (per group the
            draws of :func:`~mmssl.models.layers.drop_path.keep_count` and
            :func:`~mmssl.models.layers.drop_path.keep_indices`, in the
            block's order).

    Returns:
        list[GroupKeep] | None: One entry per group.
    """
    if drop_prob == 0.0:
        return None
    keep_prob = 1.0 - drop_prob
    gens = list(generators) if generators else [None] * len(groups.sizes)
    keep = []
    for (b, _), gen in zip(groups.sizes, gens):
        if mode == 'static':
            idx, weight = static_keep(b, drop_prob, device, gen)
            keep.append(GroupKeep(idx, idx.shape[0], 1.0, device, weight))
            continue
        if mode != 'bernoulli':
            k = keep_count(b, drop_prob, mode, gen)
            idx = None if k == b else keep_indices(b, k, device, gen)
            keep.append(GroupKeep(idx, k, b / k, device))
            continue
        if rule == 'below':
            u = torch.rand(b, device=device, **generator_kwargs(gen))
            mask = u < keep_prob
        else:
            u = torch.rand(
                b, device=device, dtype=dtype, **generator_kwargs(gen)
            )
            mask = (keep_prob + u).floor().bool()
        idx = mask.nonzero().squeeze(1)  # host sync: k varies
        k = idx.numel()
        keep.append(
            GroupKeep(None if k == b else idx, k, 1 / keep_prob, device)
        )
    return keep


__all__ = [
    'GroupKeep',
    'TokenGroups',
    'draw_keep',
    'draw_static_keeps',
    'grouped_attention',
    'pack_tokens',
    'packed_residual',
    'unpack_tokens',
]
