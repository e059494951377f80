# Copyright (c) mmssl contributors. All rights reserved.
"""Stochastic depth that skips the work of the dropped samples.

Stochastic depth (Huang et al. 2016, https://arxiv.org/abs/1603.09382)
drops a residual branch per sample: ``x + mask * branch(x) / keep_prob``
with ``mask ~ Bernoulli(keep_prob)``. The usual implementation (mmcv's
``DropPath``) computes ``branch(x)`` for every sample and multiplies the
dropped ones by zero. Here the branch runs only on the kept samples and its
result is added back at their rows, so a drop rate of 0.4 saves about 40%
of the block's compute.

Which samples are kept (``drop_path_mode``):

- ``'static'``: ``k = max(ceil(B * keep_prob), 1)`` random samples run the
  branch, a number fixed by B and the rate. The first ``k - 1`` are kept;
  the k-th is kept with probability ``B * keep_prob - (k - 1)``, a draw
  made on the device that weights its row by 0 or 1. Every sample is then
  kept with probability exactly ``keep_prob`` and kept rows are scaled by
  ``1 / keep_prob``, the distribution of the per-sample marginals of
  ``'bernoulli'``. Fixed shapes, no host value: no host sync and one
  ``torch.compile`` graph per input shape. The DINO configs use it.
- ``'bernoulli'`` (the backbones' default): each sample is kept
  independently with probability ``keep_prob`` and scaled by
  ``1 / keep_prob``, exactly the distribution of the usual
  implementation. The kept count varies, which needs a host sync
  (``nonzero``) and gives a new shape at every call.
- ``'fixed'``: a uniformly random subset of ``k = max(floor(B *
  keep_prob), 1)`` samples, scaled by ``B / k``: the count rule of
  DINOv2's batch-subset stochastic depth (Oquab et al. 2023,
  https://arxiv.org/abs/2304.07193). Fixed shapes and no host sync, but
  rounding down drops more than the nominal rate at small batches (B=4,
  rate 0.1: 1 of 4).
- ``'fixed_stochastic'``: ``k = max(floor(B * keep_prob + U), 1)`` with
  ``U ~ U[0, 1)`` drawn on the host, so ``E[k] = B * keep_prob`` whenever
  that is at least 1: the nominal rate in expectation, two shapes per
  batch size (and a new Python number per call, which a compiled block
  guards on).

In every mode the result equals ``x + branch(x)`` in expectation.
"""

import contextlib
import math
from typing import List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

DROP_PATH_SCHEDULES = ('linear', 'uniform')
DROP_PATH_MODES = ('bernoulli', 'static', 'fixed', 'fixed_stochastic')

#: Attention kernels that need no per-shape plan (no cuDNN attention).
_PLAN_FREE_ATTENTION = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
)


def generator_kwargs(generator: Optional[torch.Generator]) -> dict:
    """``dict(generator=...)`` for ``torch.rand``, empty for None.

    Passing ``generator=None`` selects torch.rand's generator overload,
    which takes no symbolic sizes: a compiled block then failed once dynamo
    made the batch size dynamic (``SymIntArrayRef expected to contain only
    concrete integers``).
    """
    return {} if generator is None else dict(generator=generator)


def subset_attention_backends(x: Tensor):
    """Context for running a branch on a random subset of ``x``'s samples.

    The kept subset has a new batch size at almost every call. cuDNN's
    attention (which torch's ``scaled_dot_product_attention`` picks for bf16
    on recent GPUs) builds an execution plan per new shape, about 12 ms of
    host time each: on an H200 that made the bf16 ViT-S/14 forward+backward
    with drop path 0.4 ten times slower than with fixed shapes. Flash and
    memory-efficient attention need no plan, so they are used instead on
    CUDA; elsewhere nothing changes.
    """
    if not x.is_cuda:
        return contextlib.nullcontext()
    return sdpa_kernel(list(_PLAN_FREE_ATTENTION))


def drop_path_rates(
    rate: float, num_layers: int, schedule: str = 'linear'
) -> List[float]:
    """Per-block drop rates.

    Args:
        rate (float): Drop rate of the last block, in [0, 1).
        num_layers (int): Number of blocks.
        schedule (str): ``'linear'`` (0 in the first block rising to
            ``rate`` in the last, Huang et al.) or ``'uniform'`` (``rate`` in
            every block, as DINOv2 uses for its large models).

    Returns:
        list[float]: One rate per block.
    """
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


@torch.compiler.disable
def host_uniform(generator: Optional[torch.Generator] = None) -> float:
    """One U[0, 1) number drawn on the host (no device sync): from
    ``generator`` if it is a CPU generator, else from torch's CPU RNG.
    Kept out of ``torch.compile`` graphs (a Python float, not a tensor)."""
    if generator is not None and generator.device.type != 'cpu':
        generator = None
    return float(torch.rand((), **generator_kwargs(generator)))


def keep_count(
    batch: int,
    drop_prob: float,
    mode: str,
    generator: Optional[torch.Generator] = None,
) -> int:
    """Samples a ``'fixed'`` or ``'fixed_stochastic'`` draw keeps.

    Args:
        batch (int): Batch size B.
        drop_prob (float): Drop rate p.
        mode (str): ``'fixed'``: ``max(floor(B(1-p)), 1)``;
            ``'fixed_stochastic'``: ``max(floor(B(1-p) + U), 1)``.
        generator (torch.Generator, optional): RNG of U (CPU only).

    Returns:
        int: k in [1, B].
    """
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
    """A uniformly random subset of ``count`` of ``range(batch)`` drawn on
    ``device`` (the ``count`` smallest of B uniform keys), without host
    sync: (count,) int64."""
    keys = torch.rand(batch, device=device, **generator_kwargs(generator))
    return keys.argsort()[:count]


def static_keep_count(batch: int, drop_prob: float) -> int:
    """Rows a ``'static'`` draw runs the branch on: ``max(ceil(B(1-p)),
    1)``, capped at B; a Python int fixed by B and p."""
    expected = batch * (1.0 - drop_prob)
    # round() first: B(1-p) = 3.0000000000000004 must give 3, not 4
    return min(max(math.ceil(round(expected, 9)), 1), batch)


def static_keep(
    batch: int,
    drop_prob: float,
    device: torch.device,
    generator: Optional[torch.Generator] = None,
) -> Tuple[Tensor, Tensor]:
    """Indices and weights of a ``'static'`` stochastic-depth draw.

    ``k = static_keep_count(B, p)`` random distinct samples; the first
    ``k - 1`` have weight ``1 / keep_prob``, the last
    ``Bernoulli(f) / keep_prob`` with ``f = B * keep_prob - (k - 1)``
    (drawn on ``device``). Each sample is kept with probability
    ``(k - 1) / B + f / B = keep_prob`` and the expected weight of every
    sample is 1.

    Returns:
        tuple[Tensor, Tensor]: Indices (k,) int64 and weights (k,)
        float32, both on ``device``.
    """
    order, weight, (count,) = static_draws(
        batch, [drop_prob], device, generator
    )
    return order[0, :count], weight[0, :count]


#: Constants of :func:`static_draws` per (batch, rates, device): built
#: once with device ops, so a draw needs no host-to-device copy.
_STATIC_TABLES: dict = {}


def _static_table(
    batch: int, rates: Tuple[float, ...], device: torch.device
) -> Tuple[Tensor, Tensor, Tensor, List[int]]:
    """``(sure, last, frac, counts)`` of n branches at batch B: per branch
    the weight of its first ``k - 1`` ranks (n, B), of its k-th rank
    (n, B), the probability ``f`` that the k-th is kept (n,), and k."""
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
    """The ``'static'`` draws of several branches at once.

    Each branch i gets what :func:`static_keep` draws for it (k_i random
    distinct samples, weights ``1 / keep_prob`` and a last weight
    ``Bernoulli(f_i) / keep_prob``), but all branches share one
    ``rand`` + ``argsort`` for the samples and one ``rand`` for the last
    weights: six kernels for a whole forward instead of about ten per
    branch, which is what a step that waits on kernel launches (a ViT-S at
    batch 32 on a GPU) spends its time on.

    Args:
        batch (int): B.
        rates (Sequence[float]): Drop rate of each branch, in (0, 1).
        device (torch.device): Where to draw.
        generator (torch.Generator, optional): RNG of the draws.

    Returns:
        tuple: ``order`` (n, B) int64, a random permutation of the samples
        per branch; ``weight`` (n, B) float32, the weight of each rank;
        ``counts``, k_i per branch. Branch i keeps ``order[i, :k_i]``
        with weights ``weight[i, :k_i]``.
    """
    sure, last, frac, counts = _static_table(batch, tuple(rates), device)
    gen = generator_kwargs(generator)
    order = torch.rand(len(rates), batch, device=device, **gen).argsort(1)
    u = torch.rand(len(rates), device=device, **gen)
    weight = torch.addcmul(sure, last, (u < frac).float()[:, None])
    return order, weight, counts


__all__ = [
    'DROP_PATH_MODES',
    'DROP_PATH_SCHEDULES',
    'check_drop_path_mode',
    'drop_path_rates',
    'generator_kwargs',
    'keep_count',
    'keep_indices',
    'static_draws',
    'static_keep',
    'static_keep_count',
    'subset_attention_backends',
]
