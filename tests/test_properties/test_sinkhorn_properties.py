"""Properties of Sinkhorn-Knopp teacher targets, against a float64 oracle.

The oracle below is written from the definition (Cuturi 2013; SwAV, Caron
et al. 2020) in log space and float64, sharing no code with mmssl: each
iteration makes every prototype's mass over the batch 1/K, then every
sample's mass 1/B; the targets are the final matrix times B.

Logits are drawn on a grid of multiples of 2**-10 with |logit| < 2**13,
so they and the logits plus an integer constant are exact in float32 and
the shift-invariance can be checked bit for bit.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mmssl.models.losses import sinkhorn_knopp

GRID = 2.0**-10
TEMPS = (0.04, 0.07)


def reference_sinkhorn(logits: torch.Tensor, temp: float, iters: int):
    """Float64 log-space Sinkhorn-Knopp; rows of the result sum to 1."""
    log_q = logits.to(torch.float64) / temp  # (B, K)
    batch, k = log_q.shape
    for _ in range(iters):
        log_q = log_q - torch.logsumexp(log_q, 0, keepdim=True) - math.log(k)
        log_q = log_q - torch.logsumexp(log_q, 1, keepdim=True)
        log_q = log_q - math.log(batch)
    return torch.exp(log_q + math.log(batch))


@st.composite
def wide_logits(draw, max_proto_offset=60, max_sample_offset=2):
    """(B, K) float32 logits: noise + per-prototype and per-sample offsets.

    Prototype offsets reach ``max_proto_offset`` logit units below the
    top prototype (1500 temperature units at T=0.04), which a single
    global maximum cannot handle. Per-sample offsets reach
    ``max_sample_offset`` logit units; keep them small where exactness is
    checked: a sample far below the others costs precision in any float32
    implementation (its shifted logits are rounded at the size of the
    offset, about 1e-7 relative, i.e. 1e-7 * offset / T in log q).
    """
    batch = draw(st.integers(1, 12), label='B')
    k = draw(st.integers(1, 12), label='K')
    spread = draw(st.sampled_from([0, 1, 4, 16]), label='spread')
    noise = draw(
        arrays(np.int64, (batch, k), elements=st.integers(-spread, spread))
    )
    proto = draw(
        arrays(np.int64, (k,), elements=st.integers(0, max_proto_offset)),
        label='prototype offsets',
    )
    sample = draw(
        arrays(
            np.int64,
            (batch, 1),
            elements=st.integers(0, 2 * max_sample_offset),
        ),
        label='sample offsets (half logit units)',
    )
    # noise: 1/16 logit units, prototype: whole, sample: half units
    grid = noise * 64 - proto * 1024 - sample * 512
    return torch.from_numpy(grid.astype(np.float32) * np.float32(GRID))


@given(
    logits=wide_logits(),
    temp=st.sampled_from(TEMPS),
    iters=st.sampled_from([1, 2, 3, 5]),
)
def test_sinkhorn_matches_float64_reference(logits, temp, iters):
    q = sinkhorn_knopp(logits, temp, iters)
    assert q.shape == logits.shape and q.dtype == torch.float32
    expected = reference_sinkhorn(logits, temp, iters)
    torch.testing.assert_close(q.double(), expected, rtol=0, atol=1e-5)


@given(
    logits=wide_logits(max_sample_offset=60),
    temp=st.sampled_from(TEMPS + (1.0,)),
)
def test_sinkhorn_rows_sum_to_one(logits, temp):
    """Also with samples far below the others (no sample underflows)."""
    q = sinkhorn_knopp(logits, temp)
    assert bool((q >= 0).all())
    torch.testing.assert_close(
        q.sum(1), torch.ones(q.shape[0]), rtol=0, atol=1e-5
    )


@given(
    logits=wide_logits(),
    temp=st.sampled_from(TEMPS),
    shift=st.integers(-64, 64),
    per_prototype=st.booleans(),
)
def test_sinkhorn_unchanged_by_logit_shifts(
    logits, temp, shift, per_prototype
):
    """A constant added to every logit (or to one prototype's column)
    changes nothing: the shifts are exact on the grid, so bit for bit."""
    q = sinkhorn_knopp(logits, temp)
    if per_prototype:
        shifted = logits.clone()
        shifted[:, shift % logits.shape[1]] += shift
    else:
        shifted = logits + shift
    assert torch.equal(sinkhorn_knopp(shifted, temp), q)


@pytest.mark.parametrize('temp', TEMPS)
def test_sinkhorn_wide_range_example(temp):
    """Rank-one logits ``a_b + c_k`` make exp(L/T) an outer product, so the
    exact targets are 1/K everywhere, however far apart the c_k (or the
    a_b) are. With one global max subtracted, prototypes more than ~88 T
    below it underflowed to zero mass: the old code was off by 0.42 at
    T=0.04 and 0.2 at T=0.07 on the first matrix, and all NaN on the
    second (samples far below the others underflowed to 0/0)."""
    a = torch.tensor([0.0, 0.25, -0.5, 0.125])  # per sample
    c = -2 * torch.arange(5.0)  # per prototype: 0, -2, ..., -8 logit units
    logits = a[:, None] + c[None, :]  # (4, 5)
    q = sinkhorn_knopp(logits, temp)
    torch.testing.assert_close(q, torch.full((4, 5), 0.2), rtol=0, atol=1e-6)
    a = torch.tensor([0.0, -10.0, -20.5, -40.25])
    q = sinkhorn_knopp(a[:, None] + c[None, :], temp)
    torch.testing.assert_close(q, torch.full((4, 5), 0.2), rtol=0, atol=1e-6)
