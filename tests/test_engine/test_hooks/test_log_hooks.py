"""BaseLRLogHook (the config's lr in the log) and the logger interval."""

from types import SimpleNamespace

import pytest
import torch
from mmengine.hooks import LoggerHook
from mmengine.logging import MessageHub
from mmengine.optim import CosineAnnealingLR, LinearLR

from mmssl.engine.hooks import BaseLRLogHook
from mmssl.engine.hooks.base_lr_log_hook import scheduled_base_lr
from mmssl.engine.hooks.log_interval_hook import clamp_logger_interval


def _layer_decayed_sgd():
    """Base lr 0.1; group 0 decayed to 0.1 * 0.2 as a patch embedding."""
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    return torch.optim.SGD(
        [dict(params=[a], lr=0.02), dict(params=[b])], lr=0.1
    )


def test_scheduled_base_lr_follows_the_scheduler_not_group_zero():
    optimizer = _layer_decayed_sgd()
    assert scheduled_base_lr(optimizer) == pytest.approx(0.1)  # no sched
    LinearLR(optimizer, start_factor=0.25, end=4, by_epoch=False)
    # group 0 is at 0.02 * 0.25 = 0.005; the base lr at 0.1 * 0.25
    assert optimizer.param_groups[0]['lr'] == pytest.approx(0.005)
    assert scheduled_base_lr(optimizer) == pytest.approx(0.025)


def test_scheduled_base_lr_is_exact_with_an_absolute_eta_min():
    """A cosine to eta_min=0.01 moves group 0 (0.02) and the base group
    (0.1) by different factors: the base group's lr is the logged one."""
    optimizer = _layer_decayed_sgd()
    cosine = CosineAnnealingLR(optimizer, T_max=2, eta_min=0.01, end=2)
    optimizer.step()
    cosine.step()
    # halfway: 0.01 + (0.1 - 0.01) / 2 (group 0's factor would give 0.075)
    assert scheduled_base_lr(optimizer) == pytest.approx(0.055)


def test_hook_logs_base_lr_instead_of_group_zero_lr():
    optimizer = _layer_decayed_sgd()
    hub = MessageHub.get_instance('test_base_lr_hook')
    hub.update_scalar('train/lr', 0.02)  # what RuntimeInfoHook records
    runner = SimpleNamespace(
        optim_wrapper=SimpleNamespace(optimizer=optimizer), message_hub=hub
    )
    BaseLRLogHook().after_train_iter(runner, 0)
    assert hub.get_scalar('train/base_lr').current() == pytest.approx(0.1)
    assert 'train/lr' not in hub.log_scalars


def _runner(interval, iters_per_epoch, max_iters):
    hook = LoggerHook(interval=interval)
    return hook, SimpleNamespace(
        hooks=[hook],
        train_dataloader=[0] * iters_per_epoch,
        train_loop=SimpleNamespace(max_iters=max_iters),
    )


@pytest.mark.parametrize(
    'interval, per_epoch, max_iters, expected',
    [(50, 20, 200, 20), (50, 20, 8, 8), (10, 20, 200, 10), (50, 0, 0, 1)],
)
def test_logger_interval_never_exceeds_an_epoch(
    interval, per_epoch, max_iters, expected
):
    hook, runner = _runner(interval, per_epoch, max_iters)
    note = clamp_logger_interval(runner)
    assert hook.interval == expected
    if expected < interval:
        assert f'logging every {expected} iterations' in note
    else:
        assert note is None
