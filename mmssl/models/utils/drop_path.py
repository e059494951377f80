# Copyright (c) mmssl contributors. All rights reserved.
"""Stochastic depth that skips the work of the dropped samples.

Stochastic depth (Huang et al. 2016, https://arxiv.org/abs/1603.09382)
drops a residual branch per sample: ``x + mask * branch(x) / keep_prob``
with ``mask ~ Bernoulli(keep_prob)``. The usual implementation (mmcv's
``DropPath``) computes ``branch(x)`` for every sample and multiplies the
dropped ones by zero. Here the branch runs only on the kept samples and its
result is added back at their rows, so a drop rate of 0.4 saves about 40%
of the block's compute. Each sample is kept independently with probability
``keep_prob`` and scaled by ``1 / keep_prob``, exactly the distribution of
the usual implementation, so the two are equal in expectation.
"""

import contextlib
from typing import Callable, List, Optional

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

DROP_PATH_SCHEDULES = ('linear', 'uniform')

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


def drop_add_residual(
    x: Tensor,
    branch: Callable[[Tensor], Tensor],
    drop_prob: float,
    training: bool,
    generator: Optional[torch.Generator] = None,
) -> Tensor:
    """``x + drop_path(branch(x))`` computing ``branch`` on kept rows only.

    Args:
        x (Tensor): Input (B, ...); ``branch`` maps it to the same shape.
        branch (Callable): The residual branch; it sees a batch of the kept
            samples only (possibly empty).
        drop_prob (float): Probability of dropping a sample's branch.
        training (bool): Drop only in training; otherwise ``x + branch(x)``.
        generator (torch.Generator, optional): RNG for the keep mask.

    Returns:
        Tensor: Same shape as ``x``. Dropped rows are ``x`` unchanged (their
        gradient flows only through the identity); kept rows are
        ``x + branch(x) / (1 - drop_prob)``.
    """
    if not training or drop_prob == 0.0:
        return x + branch(x)
    keep_prob = 1.0 - drop_prob
    rand = torch.rand(
        x.shape[0], device=x.device, **generator_kwargs(generator)
    )
    keep = rand < keep_prob  # (B,), Bernoulli(keep_prob)
    idx = keep.nonzero().squeeze(1)  # (B_kept,)
    if idx.numel() == x.shape[0]:
        return torch.add(x, branch(x), alpha=1.0 / keep_prob)
    # An empty subset still runs the branch (on zero rows) so that every
    # parameter stays in the graph, which DDP without
    # find_unused_parameters requires.
    with subset_attention_backends(x):
        residual = branch(x.index_select(0, idx))  # (B_kept, ...)
    return torch.index_add(
        x, 0, idx, residual.to(x.dtype), alpha=1.0 / keep_prob
    )
