"""clip_grad.scope: one global norm, one per student module, one per
tensor."""

import pytest
import torch
from mmengine.logging import MessageHub

from mmssl.engine.optimizers import NaNGuardOptimWrapper


def _wrapper(scope, max_norm=1.0):
    a, b, c = (torch.nn.Parameter(torch.zeros(2)) for _ in range(3))
    opt = torch.optim.SGD(
        [
            dict(params=[a, b], param_names=['backbone.a', 'backbone.b']),
            dict(params=[c], param_names=['head.c']),
        ],
        lr=1.0,
        foreach=False,
    )
    clip = dict(max_norm=max_norm, scope=scope)
    wrapper = NaNGuardOptimWrapper(optimizer=opt, clip_grad=clip)
    grads = (torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0]))
    grads += (torch.tensor([0.3, 0.4]),)
    for p, g in zip((a, b, c), grads):
        p.grad = g.clone()
    return wrapper, (a, b, c)


def test_module_scope_clips_each_module_and_logs_each_norm():
    wrapper, (a, b, c) = _wrapper('module')
    wrapper._clip_grad()
    # backbone norm 5 -> 1; head norm 0.5 stays (a global clip at 1 would
    # have scaled the head by 1 / 5.02 too)
    torch.testing.assert_close(a.grad.norm(), torch.tensor(1.0))
    torch.testing.assert_close(c.grad, torch.tensor([0.3, 0.4]))
    hub = MessageHub.get_current_instance()
    assert hub.get_scalar('train/grad_norm_backbone').current() == 5.0
    assert hub.get_scalar('train/grad_norm_head').current() == 0.5
    total = hub.get_scalar('train/grad_norm').current()
    assert total == pytest.approx((25 + 0.25) ** 0.5)


def test_tensor_scope_and_global_scope():
    wrapper, (a, b, c) = _wrapper('tensor', max_norm=0.4)
    wrapper._clip_grad()
    torch.testing.assert_close(a.grad.norm(), torch.tensor(0.4))
    torch.testing.assert_close(c.grad.norm(), torch.tensor(0.4))
    wrapper, (a, b, c) = _wrapper('global')
    wrapper._clip_grad()
    norm = torch.cat([a.grad, b.grad, c.grad]).norm()
    torch.testing.assert_close(norm, torch.tensor(1.0))


def test_bad_scope_and_unnamed_groups():
    with pytest.raises(ValueError, match="'global', 'module', 'tensor'"):
        _wrapper('modules')
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    wrapper = NaNGuardOptimWrapper(
        optimizer=torch.optim.SGD([p], lr=1.0),
        clip_grad=dict(max_norm=1.0, scope='module'),
    )
    with pytest.raises(ValueError, match='LayerDecayOptimWrapperConstructor'):
        wrapper._clip_grad()
