"""What the demo learns-tests share: one torch thread, a demo config
pointed at the test's data, and a hook that stops a demo early with its
schedules unchanged.

Import ``one_thread`` into a test module to make it autouse there
(``from tests.support.learns import StopAfter, one_thread  # noqa: F401``).
"""

import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread, as the learns-tests' figures were measured:
    training rounds differently with two (the NPID demo reached 74.09
    instead of 78.55 with two threads, e.g. under ``pytest -n 0``)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class StopAfter(Hook):
    """Ends the run after ``epochs`` epochs; every schedule stays that of
    the whole run (the learning rate, momentum and weight decay reach
    epoch ``epochs`` of it, not its end)."""

    def __init__(self, epochs: int):
        self.epochs = epochs

    def after_train_epoch(self, runner):
        if runner.epoch + 1 >= self.epochs:  # counted after this hook
            runner.train_loop.stop_training = True


def demo_cfg(config: str, data_root: str, work_dir) -> Config:
    """A digits demo (``config`` relative to the repository) reading
    ``data_root`` (train/ and val/) in the main process, without its
    end-of-epoch evaluation: the test runs ``runner.test()`` once."""
    cfg = Config.fromfile(osp.join(ROOT, config))
    cfg.work_dir = str(work_dir)
    cfg.train_dataloader.dataset.data_root = osp.join(data_root, 'train')
    cfg.train_dataloader.num_workers = 0
    cfg.train_dataloader.persistent_workers = False
    for key in ('val_dataloader', 'test_dataloader'):
        cfg[key].dataset.bank.data_root = data_root
        cfg[key].dataset.query.data_root = data_root
        cfg[key].num_workers = 0
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=10)
    return cfg


class LossCurve(Hook):
    """Records ``outputs[key]`` (the training loss by default) after every
    iteration and ends the run after ``iters`` iterations, inside an epoch
    if need be (mmssl's loops stop at the next iteration boundary); every
    schedule stays that of the whole run (a 4-epoch demo stopped after 8
    iterations trains them at the warm-up's learning rates)."""

    priority = 'LOWEST'

    def __init__(self, iters: int, key: str = 'loss'):
        self.iters = iters
        self.key = key
        self.losses = []

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ):
        self.losses.append(float(outputs[self.key]))
        if runner.iter + 1 >= self.iters:  # counted after this hook
            runner.train_loop.stop_training = True
