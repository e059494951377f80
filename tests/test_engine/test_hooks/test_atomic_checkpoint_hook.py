"""AtomicCheckpointHook: crash-safe saving; exact resume through it."""

import itertools
import os
import os.path as osp
import random
import shutil
import warnings

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.logging import MessageHub, MMLogger
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
    warned = []
    runner = SimpleNamespace(logger=SimpleNamespace(warning=warned.append))
    hook.before_run(runner)  # a runner without a config
    for cfg in (dict(), dict(trust_checkpoint=False)):
        runner.cfg = Config(cfg)
        hook.before_run(runner)
    assert not checkpoint_trusted() and warned == []
    runner.cfg = Config(dict(trust_checkpoint=True))
    try:
        hook.before_run(runner)
        assert checkpoint_trusted()
    finally:
        set_checkpoint_trust(False)
    assert warned == [
        'trust_checkpoint=True: checkpoints are fully unpickled; '
        'only load files you trust.'
    ]


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
class _FakeRunner:
    """What ``_save_checkpoint_with_step`` uses of a runner.

    ``save_checkpoint`` writes a small file (a folder with ``as_dir``, as
    deepspeed does) and records its arguments, what the message hub held
    and which files existed at that moment."""

    def __init__(self, work_dir, fail=False, as_dir=False):
        self.work_dir = str(work_dir)
        self.message_hub = MessageHub(f'atomic_hook_unit_{next(_names)}')
        self.logger = MMLogger.get_current_instance()
        self.fail, self.as_dir, self.calls = fail, as_dir, []

    def save_checkpoint(self, out_dir, filename, *args, **kwargs):
        hub = self.message_hub.runtime_info
        self.calls.append(
            dict(
                out_dir=out_dir,
                filename=filename,
                args=args,
                kwargs=kwargs,
                hub={k: hub.get(k) for k in ('last_ckpt', 'keep_ckpt_ids')},
                files=sorted(os.listdir(out_dir)),
            )
        )
        if self.fail:
            raise RuntimeError('killed mid-save')
        path = osp.join(out_dir, filename)
        if self.as_dir:
            os.makedirs(osp.join(path, 'shard'))
        else:
            with open(path, 'w') as f:
                f.write(filename)


def _hook(runner, *args, **kwargs) -> AtomicCheckpointHook:
    hook = AtomicCheckpointHook(*args, **kwargs)
    hook.before_train(runner)  # out_dir and file backend, as in a run
    return hook


def _last(runner):
    path = osp.join(runner.work_dir, 'last_checkpoint')
    if not osp.exists(path):
        return None
    with open(path) as f:
        return f.read()


def test_save_passes_settings_and_prunes_only_after_the_save(tmp_path):
    runner = _FakeRunner(tmp_path)
    hook = _hook(
        runner,
        3,
        by_epoch=False,
        save_optimizer=False,
        save_param_scheduler=False,
        max_keep_ckpts=1,
        filename_tmpl='ck_{}.pth',
        backend_args=dict(backend='local'),
        extra='passed on',
    )
    assert hook.interval == 3
    hook._save_checkpoint_with_step(runner, 1, dict(step=1))
    hook._save_checkpoint_with_step(runner, 2, dict(step=2))
    first, second = runner.calls
    new = osp.join(str(tmp_path), 'ck_2.pth')
    assert second['out_dir'] == str(tmp_path)
    assert second['filename'] == 'ck_2.pth'
    assert second['args'] == (None,)  # file_client_args
    assert second['kwargs'] == dict(
        save_optimizer=False,
        save_param_scheduler=False,
        meta=dict(step=2),
        by_epoch=False,
        backend_args=dict(backend='local'),
        extra='passed on',
    )
    # the new checkpoint stores the new ids and path; the old one is still
    # there while it is written
    assert second['hub'] == dict(last_ckpt=new, keep_ckpt_ids=[2])
    assert first['hub']['keep_ckpt_ids'] == [1]
    assert second['files'] == ['ck_1.pth', 'last_checkpoint']
    assert sorted(os.listdir(str(tmp_path))) == ['ck_2.pth', 'last_checkpoint']
    assert _last(runner) == new == hook.last_ckpt
    assert list(hook.keep_ckpt_ids) == [2]


def test_file_client_args_reach_the_runner(tmp_path):
    runner = _FakeRunner(tmp_path)
    hook = _hook(runner, file_client_args=dict(backend='disk'))
    hook._save_checkpoint_with_step(runner, 4, None)
    assert runner.calls[0]['args'] == (dict(backend='disk'),)
    assert runner.calls[0]['kwargs']['save_optimizer'] is True
    assert _last(runner) == osp.join(str(tmp_path), 'epoch_4.pth')


def test_failed_save_keeps_last_checkpoint_and_old_files(tmp_path):
    runner = _FakeRunner(tmp_path)
    hook = _hook(runner, max_keep_ckpts=1)
    hook._save_checkpoint_with_step(runner, 1, None)
    first = hook.last_ckpt
    runner.fail = True
    with pytest.raises(RuntimeError, match='killed mid-save'):
        hook._save_checkpoint_with_step(runner, 2, None)
    assert hook.last_ckpt == first == _last(runner)
    assert osp.isfile(first)


@pytest.mark.parametrize('max_keep_ckpts', [-1, 0])
def test_without_max_keep_ckpts_nothing_is_pruned(tmp_path, max_keep_ckpts):
    runner = _FakeRunner(tmp_path)
    hook = _hook(runner, max_keep_ckpts=max_keep_ckpts)  # both: keep all
    # decoys named as if a missing step were formatted into the template
    for name in ('epoch_None.pth', 'epoch_.pth', 'epoch_0.pth'):
        (tmp_path / name).write_text('not a step to prune')
    for step in (1, 2, 3):
        hook._save_checkpoint_with_step(runner, step, None)
    # 3 decoys, 3 checkpoints, last_checkpoint
    assert len(os.listdir(str(tmp_path))) == 7
    assert 'keep_ckpt_ids' not in runner.message_hub.runtime_info
    assert runner.calls[-1]['hub']['last_ckpt'] == hook.last_ckpt


def test_same_step_twice_and_new_step_never_pruned(tmp_path):
    runner = _FakeRunner(tmp_path)
    hook = _hook(runner, max_keep_ckpts=2)
    hook._save_checkpoint_with_step(runner, 1, None)
    hook._save_checkpoint_with_step(runner, 1, None)  # e.g. best and last
    assert list(hook.keep_ckpt_ids) == [1]
    hook._save_checkpoint_with_step(runner, 2, None)  # 2 kept: nothing goes
    assert list(hook.keep_ckpt_ids) == [1, 2]
    assert osp.isfile(tmp_path / 'epoch_1.pth')
    assert len(runner.calls) == 3
    # ids restored from an older run can name the step being saved again
    runner.message_hub.update_info('keep_ckpt_ids', [3, 4])
    hook = _hook(runner, max_keep_ckpts=2)  # before_train restores them
    assert list(hook.keep_ckpt_ids) == [3, 4]
    hook._save_checkpoint_with_step(runner, 3, None)
    assert list(hook.keep_ckpt_ids) == [4, 3]
    assert osp.isfile(tmp_path / 'epoch_3.pth')


def test_folder_checkpoints_are_pruned_and_other_ranks_write_nothing(
    tmp_path, monkeypatch
):
    runner = _FakeRunner(tmp_path, as_dir=True)
    hook = _hook(runner, max_keep_ckpts=1)
    hook._save_checkpoint_with_step(runner, 1, None)
    hook._save_checkpoint_with_step(runner, 2, None)
    assert sorted(os.listdir(str(tmp_path))) == [
        'epoch_2.pth',
        'last_checkpoint',
    ]
    import mmssl.engine.hooks.atomic_checkpoint_hook as module

    monkeypatch.setattr(module, 'is_main_process', lambda: False)
    other = _FakeRunner(tmp_path / 'rank1')
    os.makedirs(other.work_dir)
    hook = _hook(other, max_keep_ckpts=1)
    hook._save_checkpoint_with_step(other, 1, None)
    hook._save_checkpoint_with_step(other, 2, None)
    assert sorted(os.listdir(other.work_dir)) == ['epoch_1.pth', 'epoch_2.pth']
    assert hook.last_ckpt == osp.join(other.work_dir, 'epoch_2.pth')


def test_save_rng_state_is_ignored_with_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        AtomicCheckpointHook()
        AtomicCheckpointHook(save_rng_state=True)
    with pytest.warns(UserWarning) as record:
        AtomicCheckpointHook(save_rng_state=False)
    assert [str(w.message) for w in record] == [
        'AtomicCheckpointHook(save_rng_state=False) has no effect: '
        "random states are saved by mmssl's train loops."
    ]


def test_sharded_setting_default_and_refusal():
    assert AtomicCheckpointHook().sharded == 'auto'
    assert AtomicCheckpointHook(sharded=False).sharded is False
    assert AtomicCheckpointHook(sharded=True).sharded is True
    with pytest.raises(ValueError) as err:
        AtomicCheckpointHook(sharded='yes')
    assert str(err.value) == (
        "AtomicCheckpointHook(sharded='yes'): use True, False or 'auto' "
        '(sharded exactly with FSDP2).'
    )
