"""A stop signal that arrives in an epoch's last iteration: the epoch's
end hooks run before the checkpoint is saved, and the checkpoint says the
epoch is complete. Before, the save came first, so a resumed run started
the next epoch and never ran them (e.g. the buffer sync across ranks):
the SLURM requeue test failed on BatchNorm running_var whenever the
signal landed in the last iteration."""

import os.path as osp
import signal
import types

import pytest
import torch
from mmengine.hooks import Hook

from mmssl.engine.resume.preemption import TrainingStopped
from mmssl.engine.runner import build_runner
from tests.test_configs.test_demo_configs import tiny_demo_cfg

DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


class SignalAtLastBatch(Hook):
    priority = 'HIGHEST'

    def __init__(self):
        self.events = []

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ):
        if batch_idx + 1 == len(runner.train_loop.dataloader):
            runner.stop_signals = types.SimpleNamespace(
                received=int(signal.SIGUSR1), restore=lambda: None
            )
        self.events.append(('iter', batch_idx))

    def after_train_epoch(self, runner):
        self.events.append(('epoch_end', runner.epoch))


def test_signal_in_last_iteration_saves_after_the_epoch(
    demo_data_root, tmp_path
):
    cfg = tiny_demo_cfg(DEMO, demo_data_root, str(tmp_path))
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=2)
    runner = build_runner(cfg)
    spy = SignalAtLastBatch()
    runner.register_hook(spy)
    n = len(runner.train_dataloader)
    with pytest.raises(TrainingStopped) as stopped:
        runner.train()
    # the epoch-end hooks ran, then the save
    assert spy.events[-1] == ('epoch_end', 0)
    assert osp.basename(stopped.value.checkpoint) == f'iter_{n}.pth'
    meta = torch.load(stopped.value.checkpoint, weights_only=False)['meta']
    assert (meta['epoch'], meta['iter']) == (1, n)  # epoch 1 complete
