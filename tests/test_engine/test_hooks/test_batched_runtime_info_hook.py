"""BatchedRuntimeInfoHook: mmengine's logged values, read in one go."""

from types import SimpleNamespace

import pytest
import torch
from mmengine.logging import MessageHub

from mmssl.engine.hooks import BatchedRuntimeInfoHook


def _runner(name, max_iters=100, epoch_len=50):
    return SimpleNamespace(
        message_hub=MessageHub.get_instance(name),
        iter=0,
        max_iters=max_iters,
        train_dataloader=[None] * epoch_len,
        hooks=[],
    )


def _outputs(i):
    return dict(loss=torch.tensor(float(i)), loss_a=torch.tensor([i, 3.0 * i]))


def test_every_iteration_logs_what_mmengine_logs():
    runner = _runner('batched_rt_1')
    hook = BatchedRuntimeInfoHook()
    for i in range(3):
        runner.iter = i
        hook.after_train_iter(runner, i, outputs=_outputs(i) | dict(n=7))
    loss = runner.message_hub.get_scalar('train/loss')
    assert list(loss.data[0]) == [0.0, 1.0, 2.0]  # one value per step
    assert runner.message_hub.get_scalar('train/loss_a').current() == 4.0
    assert runner.message_hub.get_scalar('train/n').current() == 7


def test_deferred_reading_keeps_the_mean():
    runner = _runner('batched_rt_4', epoch_len=6)
    hook = BatchedRuntimeInfoHook(interval=4)
    seen = []
    for i in range(6):  # read after iterations 3 (interval) and 5 (epoch)
        runner.iter = i
        hook.after_train_iter(runner, i, outputs=_outputs(i))
        buf = runner.message_hub.log_scalars.get('train/loss')
        seen.append(None if buf is None else len(buf.data[0]))
    assert seen == [None, None, None, 1, 1, 2]
    loss = runner.message_hub.get_scalar('train/loss')
    assert loss.mean(1) == pytest.approx((4 + 5) / 2)  # the last reading
    assert loss.mean(2) == pytest.approx(sum(range(6)) / 6)  # both
    assert list(loss.data[1]) == [4, 2]  # iterations per reading
    with pytest.raises(ValueError, match='interval'):
        BatchedRuntimeInfoHook(interval=0)
