"""CPUAmpOptimWrapper: bfloat16 autocast on the CPU."""

import pytest
import torch
from torch import nn

from mmssl.engine.optimizers import CPUAmpOptimWrapper
from mmssl.registry import OPTIM_WRAPPERS


def test_autocast_and_step():
    """One SGD step through the wrapper, checked value by value.

    Weights, biases and inputs are short binary fractions, so every
    bfloat16 product and sum below is exact and the result must equal the
    step computed by hand in Python exactly."""
    w = [[0.5, -1.0, 0.25, 2.0], [1.0, 0.75, -0.5, 0.0]]
    b = [0.25, -0.5]
    xs = [[1.0, 2.0, -1.0, 0.5], [0.0, -1.0, 3.0, 1.0]]
    lr = 0.5
    model = nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(w))
        model.bias.copy_(torch.tensor(b))
    wrapper = OPTIM_WRAPPERS.build(
        dict(
            type='CPUAmpOptimWrapper',
            optimizer=torch.optim.SGD(model.parameters(), lr=lr),
        )
    )
    assert isinstance(wrapper, CPUAmpOptimWrapper)
    assert wrapper.cast_dtype is torch.bfloat16
    x = torch.tensor(xs)
    with wrapper.optim_context(model):
        out = model(x)  # (2, 2)
    assert out.dtype == torch.bfloat16
    wrapper.update_params(out.float().pow(2).mean())
    # by hand: out = x W^T + b; loss = mean(out^2) over 4 values, so
    # dloss/dout = out / 2; grad W = sum_n g_n x_n^T, grad b = sum_n g_n
    outs = [
        [sum(wi * xi for wi, xi in zip(w[o], x_)) + b[o] for o in range(2)]
        for x_ in xs
    ]
    g = [[v / 2 for v in row] for row in outs]
    new_w = [
        [
            w[o][i] - lr * sum(g[n][o] * xs[n][i] for n in range(2))
            for i in range(4)
        ]
        for o in range(2)
    ]
    new_b = [b[o] - lr * sum(g[n][o] for n in range(2)) for o in range(2)]
    assert model.weight.dtype == torch.float32  # master weights stay fp32
    assert torch.equal(model.weight, torch.tensor(new_w))
    assert torch.equal(model.bias, torch.tensor(new_b))
    assert model.weight.grad is None or not model.weight.grad.any()
    outside = model(x)
    assert outside.dtype == torch.float32


def test_bad_dtype():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match='float64'):
        CPUAmpOptimWrapper(
            optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            dtype='float64',
        )
