"""AtomicCheckpointHook: crash-safe saving and exact resume."""

import itertools
import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.runner import Runner

from mmssl.checkpoint import torch_load_safe
from mmssl.engine.hooks import AtomicCheckpointHook, get_rng_state
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
    assert 'rng_state' in ckpt
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


@pytest.mark.slow
def test_resume_matches_uninterrupted_run(tmp_path, demo_data_root):
    """2 epochs straight == 1 epoch + auto-resume + 1 epoch, bit for bit."""
    straight = _runner(tmp_path / 'straight', demo_data_root, max_epochs=2)
    straight.train()

    first = _runner(tmp_path / 'split', demo_data_root, max_epochs=1)
    first.train()
    rng_after_first = get_rng_state()
    # Advance every RNG, as a fresh process would differ anyway.
    torch.rand(100)
    resumed = _runner(
        tmp_path / 'split', demo_data_root, max_epochs=2, resume=True
    )
    resumed.train()

    assert resumed.iter == straight.iter == 4
    assert resumed.epoch == straight.epoch == 2
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
    ckpt = torch_load_safe(str(tmp_path / 'split' / 'epoch_1.pth'))
    assert torch.equal(ckpt['rng_state']['torch'], rng_after_first['torch'])


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


def test_rng_state_roundtrip_through_safe_loader(tmp_path):
    import random

    import numpy as np

    from mmssl.engine.hooks import set_rng_state

    np.random.normal()  # leave a cached gaussian in numpy's state
    state = get_rng_state()
    expected = (random.random(), np.random.rand(3), torch.rand(3))
    path = str(tmp_path / 'rng.pth')
    torch.save({'rng_state': state}, path)
    random.random(), np.random.rand(7), torch.rand(5)  # move on
    set_rng_state(torch_load_safe(path)['rng_state'])  # weights-only load
    again = (random.random(), np.random.rand(3), torch.rand(3))
    assert again[0] == expected[0]
    np.testing.assert_array_equal(again[1], expected[1])
    assert torch.equal(again[2], expected[2])
