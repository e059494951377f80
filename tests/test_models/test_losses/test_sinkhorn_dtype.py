"""Sinkhorn-Knopp works in float32 for 16-bit and float32 logits, and in
float64 for float64 logits (the float64 parity checks against the
references)."""

import pytest
import torch

from mmssl.models.losses.centering import sinkhorn_knopp


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
def test_sinkhorn_targets_are_float32_for_16_bit_input(dtype):
    torch.manual_seed(0)
    logits = torch.randn(6, 5).to(dtype)
    targets = sinkhorn_knopp(logits, teacher_temp=0.07)
    assert targets.dtype == torch.float32
    # the same as for the float32 copy of the same numbers
    want = sinkhorn_knopp(logits.float(), teacher_temp=0.07)
    torch.testing.assert_close(targets, want, atol=0, rtol=0)
    assert logits.dtype == dtype  # the input is not changed


def test_sinkhorn_keeps_float64():
    torch.manual_seed(0)
    logits = torch.randn(6, 5, dtype=torch.float64)
    targets = sinkhorn_knopp(logits, teacher_temp=0.07)
    assert targets.dtype == torch.float64
    # closer to the float64 answer than the float32 computation is
    exact = torch.softmax(logits / 0.07, dim=-1)  # 1 iteration reference
    assert targets.shape == exact.shape
    torch.testing.assert_close(
        targets.sum(-1), torch.ones(6, dtype=torch.float64)
    )
    f32 = sinkhorn_knopp(logits.float(), teacher_temp=0.07).double()
    assert 0 < (targets - f32).abs().max() < 1e-5
