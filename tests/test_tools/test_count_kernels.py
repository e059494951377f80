""".dev_scripts/count_kernels.py over mmssl_dev.step_phases:
kernels per phase, views left out, the backward pass apart."""

import torch
from torch import nn

from mmssl_dev.step_phases import KernelCounter, wrapper_label
from tests.support.tools import load_dev_script


def test_counts_kernels_per_phase_and_backward_apart():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    counter = KernelCounter()
    wrapper_label(counter.phase)(lin, 'forward', 'layer')
    with counter:
        y = lin(x.view(4, 3).t().t())  # views launch nothing
        out = y.relu().sum()
        out.backward()
    counts = {k: dict(v) for k, v in counter.counts.items()}
    assert counts['layer'] == {'addmm': 1}
    assert counts['other'] == {'relu': 1, 'sum': 1, 'ones_like': 1}
    # input and weight gradients, bias gradient, ReLU's
    assert counts['backward pass'] == {
        'mm': 2,
        'sum': 1,
        'threshold_backward': 1,
    }
    assert counter.totals() == {'layer': 1, 'other': 3, 'backward pass': 4}
    # the label leaves the method's result alone
    torch.testing.assert_close(lin(x), x @ lin.weight.t() + lin.bias)


def test_arguments():
    tool = load_dev_script('count_kernels.py')
    args = tool.parse_args(['--reference-root', 'r'])
    assert args.variants == ['plain', 'packed'] and args.batch == 2
    args = tool.parse_args(
        ['--reference-root', 'r', '--ops', 'student backbone', 'other']
    )
    assert args.ops == ['student backbone', 'other']
