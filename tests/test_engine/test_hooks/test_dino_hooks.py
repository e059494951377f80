"""Teacher momentum / temperature schedules and last-layer freezing."""

import math
from types import SimpleNamespace

import pytest
import torch
from mmengine.logging import MessageHub
from mmengine.optim import OptimWrapper

from mmssl.engine.hooks import (
    FreezeLastLayerHook,
    TeacherEMAHook,
    TeacherTempWarmupHook,
)
from mmssl.registry import MODELS


def _runner(
    model, it=0, epoch=0, max_iters=100, iters_per_epoch=10, optim_wrapper=None
):
    return SimpleNamespace(
        model=model,
        iter=it,
        epoch=epoch,
        max_iters=max_iters,
        train_dataloader=[None] * iters_per_epoch,
        message_hub=MessageHub.get_instance('dino_hook_test'),
        optim_wrapper=optim_wrapper or SimpleNamespace(),
    )


class _Teacher(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.momenta = []
        self.teacher_temp = None

    def update_teacher(self, m):
        self.momenta.append(m)


@pytest.mark.parametrize('it', [0, 1, 50, 99, 100])
def test_teacher_momentum_cosine(it):
    model = _Teacher()
    hook = TeacherEMAHook(momentum=0.992, end_momentum=1.0)
    runner = _runner(model, it=it, max_iters=100)
    hook.before_train(runner)
    hook.after_train_iter(runner, 0)
    # DINO: m = 1 - (1 - m0) * (cos(pi * it / N) + 1) / 2
    expected = 1 - (1 - 0.992) * (math.cos(math.pi * it / 100) + 1) / 2
    assert model.momenta == [pytest.approx(expected, abs=1e-12)]
    assert runner.message_hub.get_scalar(
        'train/teacher_momentum'
    ).current() == pytest.approx(expected)


def test_teacher_not_updated_after_skipped_step():
    model = _Teacher()
    runner = _runner(
        model, optim_wrapper=SimpleNamespace(last_step_skipped=True)
    )
    TeacherEMAHook().after_train_iter(runner, 0)
    assert model.momenta == []
    with pytest.raises(TypeError, match='update_teacher'):
        TeacherEMAHook().before_train(_runner(torch.nn.Linear(1, 1)))


def test_teacher_update_gets_the_device_skip_flag():
    calls = []

    class Flagged(torch.nn.Module):
        def update_teacher(self, m, skip=None):
            calls.append((m, skip))

    flag = torch.ones(())
    runner = _runner(
        Flagged(),
        it=100,
        optim_wrapper=SimpleNamespace(skip_flag=flag, last_step_skipped=True),
    )
    TeacherEMAHook(momentum=0.9).after_train_iter(runner, 0)
    # the flag decides on the device; the host flag is not read
    assert calls == [(1.0, flag)]


def test_teacher_temp_warmup_per_iter_and_epoch():
    model = _Teacher()
    hook = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=3, by_epoch=False)
    # 3 epochs x 10 iters = 30 warmup iterations: linspace(0.04, 0.07, 30)
    for it, exp in [
        (0, 0.04),
        (1, 0.04 + 0.03 / 29),
        (29, 0.07),
        (30, 0.07),
        (1000, 0.07),
    ]:
        hook.before_train_iter(_runner(model, it=it), 0)
        assert model.teacher_temp == pytest.approx(exp)
    hook = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=4, by_epoch=True)
    for epoch, exp in [(0, 0.04), (1, 0.05), (3, 0.07), (9, 0.07)]:
        hook.before_train_iter(_runner(model, epoch=epoch, it=999), 0)
        assert model.teacher_temp == pytest.approx(exp)
    hook = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=0)
    hook.before_train_iter(_runner(model), 0)
    assert model.teacher_temp == 0.07


def _head_model():
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.head = MODELS.build(
        dict(
            type='DINOHead',
            in_channels=4,
            n_prototypes=6,
            hidden_channels=8,
            bottleneck_channels=3,
            norm_last_layer=False,
        )
    )
    return model


@pytest.mark.parametrize('mode', ['zero_lr', 'drop_grad'])
def test_freeze_last_layer(mode):
    model = _head_model()
    last = [p for n, p in model.named_parameters() if 'last_layer' in n]
    rest = [p for n, p in model.named_parameters() if 'last_layer' not in n]
    assert len(last) == 2  # weight-norm gain and direction
    # zero_lr needs the frozen parameters in groups of their own
    wrapper = OptimWrapper(
        torch.optim.AdamW(
            [dict(params=rest), dict(params=last)], lr=0.1, weight_decay=0.5
        )
    )
    hook = FreezeLastLayerHook(freeze_epochs=1, mode=mode)
    runner = _runner(model, optim_wrapper=wrapper)
    hook.before_train(runner)

    def step(epoch):
        runner.epoch = epoch
        hook.before_train_iter(runner, 0)
        loss = model.head(torch.randn(5, 4)).logsumexp(-1).mean()
        wrapper.update_params(loss)

    before = [p.detach().clone() for p in last]
    mlp_before = model.head.mlp[0].weight.detach().clone()
    step(epoch=0)
    assert all(torch.equal(a, b) for a, b in zip(before, last))
    assert not torch.equal(mlp_before, model.head.mlp[0].weight)
    state = wrapper.optimizer.state
    if mode == 'zero_lr':  # dinov2: lr 0, AdamW's moments accumulate
        assert all(state[p]['exp_avg'].abs().sum() > 0 for p in last)
        assert all(float(state[p]['step']) == 1 for p in last)
        # the schedulers' value is back after the step
        assert wrapper.optimizer.param_groups[1]['lr'] == 0.1
    else:  # DINO v1: no gradient, no moments
        assert all(p not in state for p in last)
    step(epoch=1)
    assert all(not torch.equal(a, b) for a, b in zip(before, last))
    hook.after_train(runner)
    assert hook._handle is None


def test_freeze_last_layer_zero_lr_needs_own_groups():
    model = _head_model()
    wrapper = OptimWrapper(torch.optim.AdamW(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="decay_rule='dinov2'"):
        FreezeLastLayerHook().before_train(
            _runner(model, optim_wrapper=wrapper)
        )
    with pytest.raises(ValueError, match="'zero_lr', 'drop_grad'"):
        FreezeLastLayerHook(mode='zero')


def test_freeze_last_layer_needs_params():
    model = torch.nn.Linear(2, 2)
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match='last_layer'):
        FreezeLastLayerHook().before_train(
            _runner(model, optim_wrapper=wrapper)
        )


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
def test_teacher_ema_edges_wrapped_model_and_messages():
    from mmssl.engine.hooks.teacher_ema_hook import cosine_momentum

    # no iterations: the end value; one iteration: start, then end
    assert cosine_momentum(0, 0, 0.99, 1.0) == 1.0
    assert cosine_momentum(0, 1, 0.99, 1.0) == pytest.approx(0.99)
    assert cosine_momentum(1, 1, 0.99, 1.0) == pytest.approx(1.0)
    # 0 and 1 are valid momenta; outside [0, 1] the error names the value
    TeacherEMAHook(momentum=0.0, end_momentum=1.0)
    with pytest.raises(
        ValueError, match=r'^momentum must be in \[0, 1\], got 1.5\.$'
    ):
        TeacherEMAHook(momentum=1.5)
    with pytest.raises(
        ValueError, match=r'^end_momentum must be in \[0, 1\], got -0.1\.$'
    ):
        TeacherEMAHook(end_momentum=-0.1)
    # a wrapped model (DataParallel works on the CPU): the module is updated
    model = _Teacher()
    runner = _runner(torch.nn.DataParallel(model), it=0, max_iters=10)
    hook = TeacherEMAHook(momentum=0.9, end_momentum=1.0)
    hook.before_train(runner)
    hook.after_train_iter(runner, 0)
    assert model.momenta == [pytest.approx(0.9)]
    with pytest.raises(TypeError, match=r'update_teacher\(\); got Linear\.$'):
        TeacherEMAHook().before_train(_runner(torch.nn.Linear(1, 1)))
