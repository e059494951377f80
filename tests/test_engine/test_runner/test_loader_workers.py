"""Persistent dataloader workers stop when train, val or test returns.

Left to the garbage collector, torch stops them from a finalizer; when
that runs in a later ``gc.collect()`` each worker can wait out a 5 s
join timeout (20 s measured for the fine-tune evaluation's two loaders
of two workers, paid by the next test or notebook cell).
"""

import multiprocessing

import torch
from mmengine.hooks import Hook
from torch.utils.data import DataLoader

from mmssl.engine.runner import build_runner
from mmssl.engine.runner.workers import stop_persistent_workers
from tests.support.resume import tiny_cfg

SIMCLR = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


def _new_children(before):
    return [p for p in multiprocessing.active_children() if p not in before]


def test_stop_persistent_workers_of_a_loader():
    loader = DataLoader(
        torch.arange(8.0), batch_size=4, num_workers=1, persistent_workers=True
    )
    before = multiprocessing.active_children()
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(_new_children(before)) == 1  # the worker, kept
    assert stop_persistent_workers(loader)
    assert loader._iterator is None and not _new_children(before)
    assert not stop_persistent_workers(loader)  # nothing left to stop
    assert len(list(loader)) == 2  # a new worker serves the next epoch
    assert stop_persistent_workers(loader)
    assert not stop_persistent_workers(DataLoader(torch.arange(4.0)))


def test_no_worker_outlives_train(demo_data_root, tmp_path):
    cfg = tiny_cfg(
        SIMCLR,
        demo_data_root,
        str(tmp_path),
        train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=1),
    )
    cfg.train_dataloader.update(num_workers=1, persistent_workers=True)
    runner = build_runner(cfg)
    seen = []
    runner.register_hook(_CountChildren(seen))
    before = multiprocessing.active_children()
    runner.train()
    assert seen and all(n >= 1 for n in seen)  # the worker ran the epoch
    assert not _new_children(before)


class _CountChildren(Hook):
    """Records the number of live child processes after each iteration."""

    def __init__(self, seen):
        self.seen = seen

    def after_train_iter(self, runner, batch_idx, data_batch, outputs):
        self.seen.append(len(multiprocessing.active_children()))
