"""LinearWarmupLR: np.linspace(start * lr, lr, W), from 0 as DINOv2."""

import numpy as np
import pytest
import torch
from mmengine.optim import OptimWrapper

from mmssl.registry import PARAM_SCHEDULERS


def _wrapper():
    p = torch.nn.Parameter(torch.zeros(1))
    groups = [dict(params=[p], lr=0.5), dict(params=[], lr=0.1)]
    return OptimWrapper(torch.optim.SGD(groups, lr=0.5))


@pytest.mark.parametrize('start', [0.0, 0.25])
def test_linspace_values_then_hands_over(start):
    wrapper = _wrapper()
    sched = PARAM_SCHEDULERS.build(
        dict(
            type='LinearWarmupLR',
            optimizer=wrapper,
            start_factor=start,
            begin=0,
            end=4,
            by_epoch=False,
        )
    )
    seen = []
    for _ in range(6):
        seen.append([g['lr'] for g in wrapper.optimizer.param_groups])
        wrapper.optimizer.step()
        sched.step()
    for i, base in enumerate((0.5, 0.1)):
        want = list(np.linspace(start * base, base, 4)) + [base, base]
        np.testing.assert_allclose([s[i] for s in seen], want, rtol=1e-15)


def test_from_epochs_and_bad_factor():
    sched = PARAM_SCHEDULERS.get('LinearWarmupLR').build_iter_from_epoch(
        optimizer=_wrapper(), begin=0, end=2, epoch_length=3
    )
    assert (sched.begin, sched.end, sched.by_epoch) == (0, 6, False)
    with pytest.raises(ValueError, match='start_factor'):
        PARAM_SCHEDULERS.build(
            dict(type='LinearWarmupLR', optimizer=_wrapper(), start_factor=2)
        )
