"""CPUAmpOptimWrapper: bfloat16 autocast on the CPU."""

import pytest
import torch
from torch import nn

from mmssl.engine.optimizers import CPUAmpOptimWrapper
from mmssl.registry import OPTIM_WRAPPERS


def test_autocast_and_step():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    wrapper = OPTIM_WRAPPERS.build(
        dict(
            type='CPUAmpOptimWrapper',
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        )
    )
    assert isinstance(wrapper, CPUAmpOptimWrapper)
    assert wrapper.cast_dtype is torch.bfloat16
    x = torch.randn(3, 4)
    before = model.weight.detach().clone()
    with wrapper.optim_context(model):
        out = model(x)  # (3, 2)
    assert out.dtype == torch.bfloat16
    loss = out.float().pow(2).mean()
    wrapper.update_params(loss)
    # SGD: w <- w - lr * grad, parameters stay float32
    assert model.weight.dtype == torch.float32
    assert not torch.equal(model.weight, before)
    outside = model(x)
    assert outside.dtype == torch.float32


def test_bad_dtype():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match='float64'):
        CPUAmpOptimWrapper(
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            dtype='float64',
        )
