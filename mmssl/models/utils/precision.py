"""The dtype losses compute in: float32, or float64 when given float64."""

import torch
from torch import Tensor


def loss_dtype(x: Tensor) -> torch.dtype:
    """float64 for float64 input, float32 for everything else (half,
    bfloat16, integers): softmaxes and sums of the losses never run in
    16 bits, and a float64 run (the parity checks) stays float64."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def at_least_fp32(x: Tensor) -> Tensor:
    """``x`` in :func:`loss_dtype` (no copy when it already is)."""
    return x.to(loss_dtype(x))
