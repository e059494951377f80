"""Exact resume beyond the per-demo test: epoch checkpoints, iteration
loops, ETA, workers, plain mmengine hooks and checkpoints without a loop
state. Most cases use the MAE demo (random masks drawn in the model, so
the training process's random states matter) on 4 images at batch 2."""

import itertools
import random
import types

import numpy as np
import pytest
import torch
from mmengine.hooks import Hook

from mmssl.checkpoint import torch_load_safe
from mmssl.engine.runner import (
    ResumableEpochBasedTrainLoop,
    ResumableIterBasedTrainLoop,
)
from tests.support.resume import max_abs_diff, resume_from, tiny_cfg, train

MAE = 'configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py'
SIMCLR = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'
KEYS = ('iter', 'epoch', 'batch_idx', 'lr')


@pytest.fixture(autouse=True)
def _no_env_report(monkeypatch):
    monkeypatch.setattr('mmengine.runner.runner.collect_env', lambda: {})


def _rows(recorder, keys=KEYS):
    return [{k: r[k] for k in keys} for r in recorder.rows]


class DrawsBetweenEpochs(Hook):
    """Draws from every global generator after each epoch, as validation,
    a kNN evaluation or re-clustering would."""

    def after_train_epoch(self, runner) -> None:
        random.random(), np.random.rand(5), torch.rand(7)


class DrawsPerIter(Hook):
    """Records what python, numpy and torch draw before each iteration."""

    priority = 'VERY_HIGH'

    def __init__(self) -> None:
        self.draws = []

    def before_train_iter(self, runner, batch_idx, data_batch=None):
        self.draws.append(
            (random.random(), float(np.random.rand()), float(torch.rand(())))
        )


def _split_run(cfg, tmp_path, ckpt_name, hooks=()):
    """Straight run (saving ``ckpt_name``) and a run resumed from it."""
    cfg.work_dir = str(tmp_path / 'straight')
    straight, rec_a = train(cfg, hooks=[h() for h in hooks])
    (tmp_path / 'resumed').mkdir()
    resumed, rec_b = resume_from(
        cfg, str(tmp_path / 'straight' / ckpt_name), str(tmp_path / 'resumed')
    )
    return straight, rec_a, resumed, rec_b


@pytest.mark.slow
def test_epoch_checkpoint_ignores_what_ran_between_epochs(
    demo_data_root, tmp_path
):
    cfg = tiny_cfg(
        MAE,
        demo_data_root,
        '',
        checkpoint=dict(interval=1, by_epoch=True, max_keep_ckpts=-1),
    )
    # only the straight run draws after epoch 1
    straight, rec_a, resumed, rec_b = _split_run(
        cfg, tmp_path, 'epoch_1.pth', hooks=[DrawsBetweenEpochs]
    )
    assert straight.iter == resumed.iter == 6
    assert _rows(rec_b) == _rows(rec_a)[2:]
    assert max_abs_diff(straight, resumed) <= 1e-6


@pytest.mark.slow
@pytest.mark.parametrize('sampler', ['DefaultSampler', 'InfiniteSampler'])
def test_iteration_loop_resumes_exactly(sampler, demo_data_root, tmp_path):
    cfg = tiny_cfg(
        MAE,
        demo_data_root,
        '',
        train_cfg=dict(type='IterBasedTrainLoop', max_iters=6),
    )
    cfg.train_dataloader.sampler = dict(type=sampler, shuffle=True)
    straight, rec_a, resumed, rec_b = _split_run(cfg, tmp_path, 'iter_3.pth')
    assert isinstance(straight.train_loop, ResumableIterBasedTrainLoop)
    assert straight.iter == resumed.iter == 6
    assert _rows(rec_b) == _rows(rec_a)[3:]
    assert max_abs_diff(straight, resumed) <= 1e-6


@pytest.mark.slow
def test_iterations_lr_eta_and_draws_continue(
    demo_data_root, tmp_path, monkeypatch
):
    """What a user sees after ``--resume`` mid-epoch: the same iteration
    numbers, learning rates, ETA (with a clock that ticks once per call)
    and python/numpy/torch draws as in the uninterrupted run."""
    ticks = itertools.count()
    monkeypatch.setattr(
        'mmengine.hooks.iter_timer_hook.time',
        types.SimpleNamespace(time=lambda: float(next(ticks))),
    )
    cfg = tiny_cfg(MAE, demo_data_root, str(tmp_path / 'a'))
    draws_a, draws_b = DrawsPerIter(), DrawsPerIter()
    straight, rec_a = train(cfg, hooks=[draws_a])
    (tmp_path / 'b').mkdir()
    resumed, rec_b = resume_from(
        cfg,
        str(tmp_path / 'a' / 'iter_3.pth'),
        str(tmp_path / 'b'),
        hooks=[draws_b],
    )
    assert isinstance(resumed.train_loop, ResumableEpochBasedTrainLoop)
    keys = KEYS + ('eta',)
    assert _rows(rec_b, keys) == _rows(rec_a, keys)[3:]
    assert [r['eta'] for r in rec_b.rows] == [4.0, 2.0, 0.0]
    assert [r['batch_idx'] for r in rec_b.rows] == [1, 0, 1]
    assert draws_b.draws == draws_a.draws[3:]
    assert max_abs_diff(straight, resumed) <= 1e-6


@pytest.mark.slow
def test_plain_mmengine_checkpoint_hook(demo_data_root, tmp_path):
    """The loop state is saved by the runner whatever the hook."""
    cfg = tiny_cfg(
        MAE,
        demo_data_root,
        '',
        checkpoint=dict(
            type='CheckpointHook',
            interval=3,
            by_epoch=False,
            max_keep_ckpts=-1,
        ),
    )
    straight, rec_a, resumed, rec_b = _split_run(cfg, tmp_path, 'iter_3.pth')
    state = torch_load_safe(str(tmp_path / 'straight' / 'iter_3.pth'))
    assert state['loop_state']['epoch'] == 1
    assert state['loop_state']['batches'] == 1
    assert state['loop_state']['iter'] == 3
    assert _rows(rec_b) == _rows(rec_a)[3:]
    assert max_abs_diff(straight, resumed) <= 1e-6


@pytest.mark.slow
def test_checkpoint_without_loop_state_keeps_the_position(
    demo_data_root, tmp_path
):
    """An mmengine checkpoint (no ``loop_state``): the iteration count,
    schedule and data position still continue; only the random states
    start afresh."""
    cfg = tiny_cfg(MAE, demo_data_root, str(tmp_path / 'a'))
    straight, rec_a = train(cfg)
    ckpt = torch_load_safe(str(tmp_path / 'a' / 'iter_3.pth'))
    del ckpt['loop_state']
    torch.save(ckpt, str(tmp_path / 'legacy.pth'))
    (tmp_path / 'b').mkdir()
    resumed, rec_b = resume_from(
        cfg, str(tmp_path / 'legacy.pth'), str(tmp_path / 'b')
    )
    assert resumed.iter == 6
    assert _rows(rec_b) == _rows(rec_a)[3:]


@pytest.mark.slow
@pytest.mark.parametrize('sample_seeds', [True, False])
def test_workers_exact_only_with_sample_seeds(
    sample_seeds, demo_data_root, tmp_path
):
    """Two persistent workers. With per-sample seeds the resumed run is
    exact; without (negative control) the workers' streams restart and
    the augmentations of the resumed epoch differ."""
    cfg = tiny_cfg(
        SIMCLR,
        demo_data_root,
        '',
        train_cfg=dict(
            type='EpochBasedTrainLoop',
            max_epochs=3,
            sample_seeds=sample_seeds,
        ),
    )
    cfg.train_dataloader.update(num_workers=2, persistent_workers=True)
    straight, rec_a, resumed, rec_b = _split_run(cfg, tmp_path, 'iter_3.pth')
    assert _rows(rec_b) == _rows(rec_a)[3:]
    diff = max_abs_diff(straight, resumed)
    if sample_seeds:
        assert diff <= 1e-6
    else:
        assert diff > 1e-3


def test_optimizer_state_of_other_groups_is_one_clear_error(
    demo_data_root, tmp_path
):
    """A checkpoint whose optimizer state has other parameter groups than
    the config builds (an older paramwise rule, another model): one
    message naming the file and both ways on, not torch's traceback."""
    from mmssl.errors import TrainConfigError

    cfg = tiny_cfg(MAE, demo_data_root, str(tmp_path / 'a'))
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
    train(cfg)
    ckpt = torch_load_safe(str(tmp_path / 'a' / 'iter_2.pth'))
    groups = ckpt['optimizer']['param_groups']
    extra = dict(groups[0], params=[])  # one group more than it builds
    ckpt['optimizer']['param_groups'] = groups + [extra]
    old = str(tmp_path / 'old_groups.pth')
    torch.save(ckpt, old)
    (tmp_path / 'b').mkdir()
    with pytest.raises(TrainConfigError) as info:
        resume_from(cfg, old, str(tmp_path / 'b'))
    message = str(info.value)
    assert 'old_groups.pth' in message
    assert 'different number of parameter groups' in message
    assert 'resume=False' in message and 'paramwise_cfg' in message
    assert info.value.exit_code == 2
