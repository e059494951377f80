"""AtomicCheckpointHook: crash-safe saving; exact resume through it."""

import itertools
import os
import os.path as osp
import random
import shutil

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from mmssl.checkpoint import torch_load_safe
from mmssl.engine.hooks import AtomicCheckpointHook
from mmssl.registry import RUNNERS

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
CONFIG = osp.join(
    ROOT, 'configs', 'simclr', 'simclr_resnet18-w16_1xb64-10e_demo.py'
)
_names = itertools.count()


def _runner(
    work_dir, data_root, max_epochs, num_images=8, resume=False, **ckpt_kwargs
) -> Runner:
    """The SimCLR demo config on a few images, no workers, no validation."""
    cfg = Config.fromfile(CONFIG)
    cfg.work_dir = str(work_dir)
    cfg.experiment_name = f'ckpt_test_{os.getpid()}_{next(_names)}'
    loader = cfg.train_dataloader
    loader.dataset.data_root = osp.join(data_root, 'train')
    loader.dataset.indices = num_images
    loader.batch_size = 4
    loader.num_workers = 0
    loader.persistent_workers = False
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=max_epochs)
    cfg.param_scheduler = [
        dict(type='CosineAnnealingLR', T_max=4, by_epoch=False, begin=0, end=4)
    ]
    for key in (
        'val_dataloader',
        'val_cfg',
        'val_evaluator',
        'test_dataloader',
        'test_cfg',
        'test_evaluator',
    ):
        cfg[key] = None
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.default_hooks.checkpoint = dict(
        type='AtomicCheckpointHook', interval=1, **ckpt_kwargs
    )
    cfg.resume = resume
    return RUNNERS.build(cfg)  # runner_type: SSLRunner


def test_default_runtime_uses_atomic_hook():
    cfg = Config.fromfile(CONFIG)
    assert cfg.default_hooks.checkpoint.type == 'AtomicCheckpointHook'


def test_crash_mid_save_keeps_previous_checkpoint(
    tmp_path, demo_data_root, monkeypatch
):
    # max_keep_ckpts=1: mmengine's CheckpointHook would delete epoch_1.pth
    # before writing epoch_2.pth, leaving nothing to resume from.
    runner = _runner(
        tmp_path, demo_data_root, max_epochs=2, num_images=4, max_keep_ckpts=1
    )
    real_save = torch.save
    calls = []

    def save_then_die_on_second(obj, f, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            return real_save(obj, f, *args, **kwargs)
        f.write(b'PK\x03\x04 half a checkpoint')
        raise RuntimeError('killed mid-save')

    monkeypatch.setattr(torch, 'save', save_then_die_on_second)
    with pytest.raises(RuntimeError, match='killed mid-save'):
        runner.train()
    monkeypatch.setattr(torch, 'save', real_save)

    first = osp.join(str(tmp_path), 'epoch_1.pth')
    with open(osp.join(str(tmp_path), 'last_checkpoint')) as f:
        assert f.read() == first
    ckpt = torch_load_safe(first)
    assert ckpt['meta']['epoch'] == 1
    assert ckpt['loop_state']['batches'] == 1  # 4 images at batch 4
    files = os.listdir(str(tmp_path))
    assert [f for f in files if f.endswith('.pth')] == ['epoch_1.pth']
    assert not [f for f in files if f.endswith('.tmp')]


def test_max_keep_ckpts_removes_oldest_after_save(tmp_path, demo_data_root):
    runner = _runner(
        tmp_path, demo_data_root, max_epochs=3, num_images=4, max_keep_ckpts=2
    )
    runner.train()
    files = sorted(f for f in os.listdir(str(tmp_path)) if f.endswith('.pth'))
    assert files == ['epoch_2.pth', 'epoch_3.pth']
    with open(osp.join(str(tmp_path), 'last_checkpoint')) as f:
        assert f.read() == osp.join(str(tmp_path), 'epoch_3.pth')
    hook = next(h for h in runner.hooks if isinstance(h, AtomicCheckpointHook))
    assert list(hook.keep_ckpt_ids) == [2, 3]


class _Draws(Hook):
    """What python ``random`` and numpy draw before each iteration (after
    the batch is loaded, where a model or hook would draw)."""

    priority = 'VERY_HIGH'

    def __init__(self):
        self.values = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.values.append((random.random(), float(np.random.rand())))


@pytest.mark.slow
def test_resume_matches_uninterrupted_run(tmp_path, demo_data_root):
    """2 epochs straight == resume after iteration 3 (inside epoch 2),
    bit for bit, and python/numpy draw the same values after the resume."""
    straight = _runner(
        tmp_path / 'straight', demo_data_root, max_epochs=2, by_epoch=False
    )
    draws_a = _Draws()
    straight.register_hook(draws_a)
    straight.train()

    (tmp_path / 'split').mkdir()
    cut = shutil.copy(tmp_path / 'straight' / 'iter_3.pth', tmp_path / 'split')
    (tmp_path / 'split' / 'last_checkpoint').write_text(str(cut))
    # Move every generator on: a fresh process would differ anyway.
    random.random(), np.random.rand(9), torch.rand(100)
    resumed = _runner(
        tmp_path / 'split', demo_data_root, max_epochs=2, resume=True
    )
    draws_b = _Draws()
    resumed.register_hook(draws_b)
    resumed.train()

    assert resumed.iter == straight.iter == 4
    assert resumed.epoch == straight.epoch == 2
    # python and numpy continue their streams exactly after the resume
    assert len(draws_b.values) == 1
    assert draws_b.values == draws_a.values[3:]
    a = straight.model.state_dict()
    b = resumed.model.state_dict()
    assert a.keys() == b.keys()
    diff = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    assert diff <= 1e-6
    lr = [g['lr'] for g in straight.optim_wrapper.param_groups]
    assert [g['lr'] for g in resumed.optim_wrapper.param_groups] == lr
    # Momentum buffers continued from the checkpoint.
    sa = straight.optim_wrapper.optimizer.state_dict()['state']
    sb = resumed.optim_wrapper.optimizer.state_dict()['state']
    assert all(
        torch.allclose(
            sa[i]['momentum_buffer'], sb[i]['momentum_buffer'], atol=1e-6
        )
        for i in sa
    )
    # The message hub (loss history) was restored, then extended.
    hist = resumed.message_hub.get_scalar('train/loss')
    assert len(hist.data[0]) == 4


def test_trust_checkpoint_config_key(monkeypatch):
    from types import SimpleNamespace

    from mmssl.checkpoint import checkpoint_trusted, set_checkpoint_trust

    monkeypatch.delenv('MMSSL_TRUST_CHECKPOINT', raising=False)
    hook = AtomicCheckpointHook()
    runner = SimpleNamespace(
        cfg=Config(dict(trust_checkpoint=False)),
        logger=SimpleNamespace(warning=lambda msg: None),
    )
    hook.before_run(runner)
    assert not checkpoint_trusted()
    runner.cfg = Config(dict(trust_checkpoint=True))
    try:
        hook.before_run(runner)
        assert checkpoint_trusted()
    finally:
        set_checkpoint_trust(False)
