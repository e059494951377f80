"""Sinkhorn-Knopp works in float32 whatever the dtype of the logits."""

import pytest
import torch

from mmssl.models.losses.centering import sinkhorn_knopp


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float64])
def test_sinkhorn_targets_are_float32_for_any_input_dtype(dtype):
    torch.manual_seed(0)
    logits = torch.randn(6, 5).to(dtype)
    targets = sinkhorn_knopp(logits, teacher_temp=0.07)
    assert targets.dtype == torch.float32
    # the same as for the float32 copy of the same numbers
    want = sinkhorn_knopp(logits.float(), teacher_temp=0.07)
    torch.testing.assert_close(targets, want, atol=0, rtol=0)
    assert logits.dtype == dtype  # the input is not changed
