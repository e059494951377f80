# Copyright (c) mmssl contributors. All rights reserved.
"""Stochastic depth: the rate of each block, which samples keep a
residual branch, and the residual that runs the branch on those only.

Stochastic depth (Huang et al. 2016, https://arxiv.org/abs/1603.09382)
drops a residual branch per sample: ``x + mask * branch(x) / keep_prob``
with ``mask ~ Bernoulli(keep_prob)``. mmcv's ``DropPath`` computes
``branch(x)`` for every sample and multiplies the dropped ones by zero;
here the branch runs on the kept samples only and is added back at their
rows (:func:`packed_residual`), so a rate of 0.4 saves about 40% of a
block's compute. The rates rise linearly over the blocks or are uniform
(:func:`drop_path_rates`).

Which samples are kept (``drop_path_mode``):

- ``'static'``: ``k = max(ceil(B * keep_prob), 1)`` random samples run the
  branch, a number fixed by B and the rate. The first ``k - 1`` are kept;
  the k-th is kept with probability ``B * keep_prob - (k - 1)``, a draw
  made on the device that weights its row by 0 or 1. Every sample is then
  kept with probability exactly ``keep_prob`` and kept rows are scaled by
  ``1 / keep_prob``: the per-sample marginals of ``'bernoulli'`` with
  fixed shapes and no host value (one ``torch.compile`` graph per input
  shape). The DINO configs use it.
- ``'bernoulli'`` (the backbones' default): each sample kept
  independently with probability ``keep_prob``, scaled by ``1 /
  keep_prob``: the usual distribution. The kept count varies, which needs
  a host sync (``nonzero``) and gives a new shape at every call.
- ``'fixed'``: a random subset of ``k = max(floor(B * keep_prob), 1)``
  samples scaled by ``B / k``: the count rule of DINOv2's batch-subset
  stochastic depth (Oquab et al. 2023, https://arxiv.org/abs/2304.07193).
  Rounding down drops more than the nominal rate at small batches.
- ``'fixed_stochastic'``: ``k = max(floor(B * keep_prob + U), 1)`` with
  ``U ~ U[0, 1)`` drawn on the host: the nominal rate in expectation,
  two shapes per batch size.

In every mode the result equals ``x + branch(x)`` in expectation. Tokens
come packed (:mod:`~mmssl.models.layers.token_packing`): every group of
crops draws its own samples, in group order.
"""

import math
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .attention import plan_free_attention
from .token_packing import TokenGroups

DROP_PATH_SCHEDULES = ('linear', 'uniform')
DROP_PATH_MODES = ('bernoulli', 'static', 'fixed', 'fixed_stochastic')
Generators = Optional[Sequence[Optional[torch.Generator]]]


def drop_path_rates(
    rate: float, num_layers: int, schedule: str = 'linear'
) -> List[float]:
    """Per-block drop rates: ``'linear'`` (0 in the first block rising to
    ``rate`` in the last, Huang et al.) or ``'uniform'`` (``rate`` in
    every block, as DINOv2 for its large models and DINOv3)."""
    if schedule not in DROP_PATH_SCHEDULES:
        raise ValueError(
            f'drop_path_schedule={schedule!r} is not supported; use one of '
            f'{DROP_PATH_SCHEDULES}.'
        )
    if not 0.0 <= rate < 1.0:
        raise ValueError(f'drop_path_rate must be in [0, 1), got {rate}.')
    if schedule == 'uniform':
        return [float(rate)] * num_layers
    if num_layers == 1:
        return [0.0]
    step = rate / (num_layers - 1)
    return [i * step for i in range(num_layers)]


def check_drop_path_mode(mode: str) -> str:
    """Return ``mode`` if it is one of :data:`DROP_PATH_MODES`."""
    if mode not in DROP_PATH_MODES:
        raise ValueError(
            f'drop_path_mode={mode!r} is not supported; use one of '
            f'{DROP_PATH_MODES} (see mmssl/models/layers/drop_path.py).'
        )
    return mode


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
            branch, drawn on the device (``'static'``; ``scale`` unused).
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


Keep = Optional[List[GroupKeep]]  # one entry per group; None: keep all


# ----------------------------------------------------------------------
# which samples keep a branch
def generator_kwargs(generator: Optional[torch.Generator]) -> dict:
    """``dict(generator=...)`` for ``torch.rand``, empty for None
    (``generator=None`` selects an overload that takes no symbolic sizes,
    which fails in a compiled block with a dynamic batch)."""
    return {} if generator is None else dict(generator=generator)


@torch.compiler.disable
def host_uniform(generator: Optional[torch.Generator] = None) -> float:
    """One U[0, 1) number drawn on the host (no device sync), from
    ``generator`` if it is a CPU generator, else from torch's CPU RNG."""
    if generator is not None and generator.device.type != 'cpu':
        generator = None
    return float(torch.rand((), **generator_kwargs(generator)))


def keep_count(
    batch: int,
    drop_prob: float,
    mode: str,
    generator: Optional[torch.Generator] = None,
) -> int:
    """k of a fixed-count draw: ``'fixed'``: ``max(floor(B(1-p)), 1)``;
    ``'fixed_stochastic'``: ``max(floor(B(1-p) + U), 1)``."""
    expected = batch * (1.0 - drop_prob)
    if mode == 'fixed_stochastic':
        expected += host_uniform(generator)
    elif mode != 'fixed':
        raise ValueError(
            f'keep_count is for the fixed-count modes, got {mode!r}.'
        )
    return min(max(int(math.floor(expected)), 1), batch)


def keep_indices(
    batch: int,
    count: int,
    device: torch.device,
    generator: Optional[torch.Generator] = None,
) -> Tensor:
    """A uniformly random subset (count,) of ``range(batch)``, drawn on
    ``device`` without host sync (the smallest of B uniform keys)."""
    keys = torch.rand(batch, device=device, **generator_kwargs(generator))
    return keys.argsort()[:count]


def static_keep_count(batch: int, drop_prob: float) -> int:
    """Rows a ``'static'`` draw runs: ``max(ceil(B(1-p)), 1)``, at most
    B; a Python int fixed by B and p."""
    expected = batch * (1.0 - drop_prob)
    # round() first: B(1-p) = 3.0000000000000004 must give 3, not 4
    return min(max(math.ceil(round(expected, 9)), 1), batch)


#: Constants of :func:`static_draws` per (batch, rates, device).
_STATIC_TABLES: dict = {}


def _static_table(batch: int, rates: Tuple[float, ...], device) -> tuple:
    """``(sure, last, frac, counts)``: per branch the weight of its first
    ``k - 1`` ranks (n, B), of its k-th rank (n, B), the probability that
    the k-th is kept (n,), and k. Built once with device ops, so a draw
    copies nothing from the host."""
    key = (batch, rates, str(device))
    if key not in _STATIC_TABLES:
        if len(_STATIC_TABLES) >= 64:  # many batch sizes: start again
            _STATIC_TABLES.clear()
        rank = torch.arange(batch, device=device)
        counts = [static_keep_count(batch, p) for p in rates]
        sure, last, frac = [], [], torch.empty(len(rates), device=device)
        for i, (p, k) in enumerate(zip(rates, counts)):
            scale = 1.0 / (1.0 - p)
            sure.append((rank < k - 1).float() * scale)
            last.append((rank == k - 1).float() * scale)
            frac[i] = batch * (1.0 - p) - (k - 1)
        _STATIC_TABLES[key] = (
            torch.stack(sure),
            torch.stack(last),
            frac,
            counts,
        )
    return _STATIC_TABLES[key]


@torch.compiler.disable
def static_draws(
    batch: int,
    rates: Sequence[float],
    device: torch.device,
    generator: Optional[torch.Generator] = None,
) -> Tuple[Tensor, Tensor, List[int]]:
    """The ``'static'`` draws of n branches in one ``rand`` + ``argsort``
    and one ``rand`` (a few kernels per forward, not ten per branch).

    Returns:
        tuple: ``order`` (n, B) int64, a random permutation per branch;
        ``weight`` (n, B) float32 per rank: ``1 / keep_prob`` for the
        first ``k_i - 1``, ``Bernoulli(f_i) / keep_prob`` for the k_i-th
        (``f_i = B * keep_prob - (k_i - 1)``), so every sample is kept
        with probability ``keep_prob`` and has expected weight 1;
        ``counts``, k_i per branch. Branch i keeps ``order[i, :k_i]``.
    """
    sure, last, frac, counts = _static_table(batch, tuple(rates), device)
    gen = generator_kwargs(generator)
    order = torch.rand(len(rates), batch, device=device, **gen).argsort(1)
    u = torch.rand(len(rates), device=device, **gen)
    weight = torch.addcmul(sure, last, (u < frac).float()[:, None])
    return order, weight, counts


def draw_keep(
    groups: TokenGroups,
    drop_prob: float,
    rule: str,
    device: torch.device,
    dtype: torch.dtype,
    generators: Generators = None,
    mode: str = 'bernoulli',
) -> Keep:
    """Which samples of each group of ``groups`` keep one residual
    branch of rate ``drop_prob`` (0: None, every sample), drawn as
    ``mode`` says on ``device``, group g with ``generators[g]`` (None:
    the global RNG). ``'bernoulli'`` keeps a sample where ``u < 1 - p``
    (``rule='below'``) or, as mmcv's ``DropPath``, where ``floor(1 - p +
    u) == 1`` with ``u`` in ``dtype`` (``'floor'``).

    Returns:
        list[GroupKeep] | None: One entry per group.
    """
    if drop_prob == 0.0:
        return None
    if mode == 'static':
        return draw_static_keeps(groups, [drop_prob], device, generators)[0]
    keep_prob = 1.0 - drop_prob
    gens = list(generators) if generators else [None] * len(groups.sizes)
    keep = []
    for (b, _), gen in zip(groups.sizes, gens):
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


def draw_static_keeps(
    groups: TokenGroups,
    rates: Sequence[float],
    device: torch.device,
    generators: Generators = None,
) -> List[Keep]:
    """The ``'static'`` keeps of many branches (a whole backbone's) in a
    few kernels per group; a rate of 0 gives None. With several groups
    each :class:`GroupKeep` also holds its token rows and their weights,
    so a branch gathers all groups' tokens in one call."""
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


def draw_layer_keeps(
    layers: Sequence, groups: TokenGroups, x: Tensor, generators=None
) -> List[Tuple[Keep, Keep]]:
    """Every block's kept samples (attention branch, FFN branch) for one
    forward, drawn outside the blocks: a compiled block then sees fixed
    shapes, a checkpointed one replays them. When every block is
    ``'static'`` they draw together (:func:`draw_static_keeps`), else
    each block draws its own (``layer.draw_keeps``)."""
    if any(layer.drop_path_mode != 'static' for layer in layers):
        return [layer.draw_keeps(groups, x, generators) for layer in layers]
    rates = [layer.drop_rate_now() for layer in layers for _ in range(2)]
    keeps = draw_static_keeps(groups, rates, x.device, generators)
    return list(zip(keeps[0::2], keeps[1::2]))


# ----------------------------------------------------------------------
# the residual on the kept samples
Branch = Callable[[Tensor, TokenGroups], Tensor]


def _kept_rows(
    groups: TokenGroups, keep: List[GroupKeep]
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
    x: Tensor, branch: Branch, groups: TokenGroups, keep: Keep
) -> Tensor:
    """``x + drop_path(branch(x))`` on packed tokens (S, C), running
    ``branch(tokens, layout)`` on the kept samples only; the dropped
    samples' rows are ``x`` unchanged. ``keep`` None: every sample,
    unscaled (evaluation, no drop path)."""
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
    with plan_free_attention(x):  # a new batch size at every call
        residual = branch(x.index_select(0, rows), kept).to(x.dtype)
    if same_scale:
        return torch.index_add(x, 0, rows, residual, alpha=scales[0])
    # Fixed-count modes: group g's branch is scaled by B_g / k_g.
    per_row = torch.cat(
        [x.new_full((r, 1), s) for r, s in zip(kept.rows, scales)]
    )  # (S_kept, 1)
    return torch.index_add(x, 0, rows, residual * per_row)


def _weighted_residual(
    x: Tensor, branch: Branch, groups: TokenGroups, keep: List[GroupKeep]
) -> Tensor:
    """:func:`packed_residual` of the ``'static'`` mode: per kept sample a
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
    # Several groups: the rows and their weights come with the draws.
    rows = torch.cat([k.rows for k in keep])
    per_row = torch.cat([k.row_weight for k in keep])  # (S_kept,)
    kept = TokenGroups(
        tuple((k.count, t) for k, (_, t) in zip(keep, groups.sizes))
    )
    residual = branch(x.index_select(0, rows), kept)  # (S_kept, C)
    weighted = residual * per_row[:, None]
    return torch.index_add(x, 0, rows, weighted.to(x.dtype))


__all__ = [
    'DROP_PATH_MODES',
    'DROP_PATH_SCHEDULES',
    'GroupKeep',
    'check_drop_path_mode',
    'draw_keep',
    'draw_layer_keeps',
    'draw_static_keeps',
    'drop_path_rates',
    'keep_count',
    'keep_indices',
    'packed_residual',
    'static_draws',
    'static_keep_count',
]
