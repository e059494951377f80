"""The resumable loops' state, config mapping and stop; bad-file counts."""

import random
import types

import numpy as np
import pytest
import torch
from mmengine.runner import EpochBasedTrainLoop, IterBasedTrainLoop
from torch.utils.data import DataLoader

from mmssl.checkpoint import torch_load_safe
from mmssl.engine.hooks import BadFileSummaryHook
from mmssl.engine.resume.rng import get_rng_state
from mmssl.engine.runner import (
    ResumableEpochBasedTrainLoop,
    ResumableIterBasedTrainLoop,
)
from mmssl.engine.runner.loops import resumable_loop_cfg
from mmssl.registry import LOOPS
from tests.support.resume import tiny_cfg, train


def _loop(n=10, batch=2):
    runner = types.SimpleNamespace(
        visualizer=types.SimpleNamespace(dataset_meta=None), seed=0
    )
    loader = DataLoader(list(range(n)), batch_size=batch)
    return ResumableEpochBasedTrainLoop(runner, loader, max_epochs=3)


@pytest.mark.parametrize(
    'given, built',
    [
        (dict(type='EpochBasedTrainLoop', max_epochs=2), 'Epoch'),
        (dict(type=EpochBasedTrainLoop, max_epochs=2), 'Epoch'),
        (dict(by_epoch=True, max_epochs=2), 'Epoch'),
        (dict(type='IterBasedTrainLoop', max_iters=2), 'Iter'),
        (dict(type=IterBasedTrainLoop, max_iters=2), 'Iter'),
        (dict(by_epoch=False, max_iters=2), 'Iter'),
    ],
)
def test_plain_loops_become_resumable(given, built):
    cfg = resumable_loop_cfg(given)
    assert cfg['type'] == f'Resumable{built}BasedTrainLoop'
    assert 'by_epoch' not in cfg
    assert given.get('type', 'x') != cfg['type']  # input left alone


def test_loop_inherited_from_mmpretrain_is_built_in_mmssl_scope():
    """mmengine marks dicts from an ``mmpretrain::`` base with
    ``_scope_='mmpretrain'``; that registry has no Resumable loops."""
    given = dict(type='EpochBasedTrainLoop', max_epochs=2)
    given['_scope_'] = 'mmpretrain'
    cfg = resumable_loop_cfg(given)
    assert cfg['_scope_'] == 'mmssl'
    # what mmengine's build_from_cfg looks the type up in
    for scope, found in (('mmpretrain', None), ('mmssl', cfg['type'])):
        with LOOPS.switch_scope_and_registry(scope) as registry:
            cls = registry.get(cfg['type'])
        assert (cls and cls.__name__) == found


@pytest.mark.parametrize(
    'cfg',
    [
        dict(type='mmengine.EpochBasedTrainLoop', max_epochs=1),
        dict(type='FeatureValLoop'),
    ],
)
def test_other_loops_are_kept(cfg):
    assert resumable_loop_cfg(cfg) == cfg


def test_state_dict_loads_weights_only(tmp_path):
    loop = _loop()
    loop._data_epoch, loop._batches, loop._iters_done = 2, 3, 13
    path = str(tmp_path / 'state.pth')
    torch.save({'loop_state': loop.state_dict()}, path)
    state = torch_load_safe(path)['loop_state']  # allowlist unchanged
    assert {k: state[k] for k in ('epoch', 'batches', 'iter')} == dict(
        epoch=2, batches=3, iter=13
    )
    assert state['epoch_length'] == 5
    assert torch.equal(state['rng']['torch'], torch.get_rng_state())


def test_load_state_dict_inside_and_at_end_of_epoch():
    loop = _loop()
    rng = get_rng_state()
    loop.load_state_dict(dict(epoch=1, batches=3, iter=8, rng=rng))
    assert (loop.epoch, loop.iter, loop.resume_batches) == (1, 8, 3)
    assert loop._resume_at[2] is rng
    # all 5 batches of epoch 1 done: epoch 2 from its start, re-seeded
    loop.load_state_dict(dict(epoch=1, batches=5, iter=10, rng=rng))
    assert (loop.epoch, loop.iter, loop.resume_batches) == (2, 10, 0)
    assert loop._resume_at == (2, 0, None)


def test_position_from_meta_of_a_plain_checkpoint():
    loop = _loop()  # 5 batches per epoch
    loop._epoch, loop._iter = 1, 8  # mmengine iteration checkpoint
    loop._prepare_resume()
    assert (loop.epoch, loop.resume_batches) == (1, 3)
    loop = _loop()
    loop._epoch, loop._iter = 1, 10  # saved at the epoch's last iteration
    loop._prepare_resume()
    assert (loop.epoch, loop.resume_batches) == (2, 0)


def test_validation_leaves_training_randomness_alone():
    loop = _loop()
    seen = {}

    def validate():
        random.random(), np.random.rand(4), torch.rand(4)
        # a checkpoint saved now (save_best) holds the training states
        seen['state'] = loop.state_dict()['rng']

    loop._runner.val_loop = types.SimpleNamespace(run=validate)
    before = get_rng_state()
    loop._validate()
    after = get_rng_state()
    for state in (after, seen['state']):
        assert state['python'] == before['python']
        assert torch.equal(state['numpy']['key'], before['numpy']['key'])
        assert torch.equal(state['torch'], before['torch'])


@pytest.mark.slow
def test_stop_training_inside_an_epoch_does_not_end_it(
    demo_data_root, tmp_path
):
    """A stop requested mid-epoch (e.g. on a signal) leaves the epoch open:
    no ``after_train_epoch`` (no epoch checkpoint claiming it finished)."""
    from mmengine.hooks import Hook

    class StopAt3(Hook):
        def after_train_iter(self, runner, batch_idx, **kwargs):
            if runner.iter + 1 == 3:
                runner.train_loop.stop_training = True

    cfg = tiny_cfg(
        'configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py',
        demo_data_root,
        str(tmp_path),
        checkpoint=dict(interval=1, by_epoch=True),
    )
    runner, recorder = train(cfg, hooks=[StopAt3()])
    assert runner.iter == 3 and runner.epoch == 1
    assert len(recorder.rows) == 3
    assert sorted(p.name for p in tmp_path.glob('*.pth')) == ['epoch_1.pth']


def test_bad_file_counts_continue_after_resume():
    hook = BadFileSummaryHook()
    hook.counter.bad = {'/d/a.jpg': 'truncated'}
    hook.counter.samples = 40
    hook.counter.new = {'/d/b.jpg': 'zero bytes'}
    hook.counter.pending_samples = 8
    checkpoint = {}
    hook.before_save_checkpoint(None, checkpoint)

    resumed = BadFileSummaryHook()
    resumed.after_load_checkpoint(None, checkpoint)
    resumed.before_train(types.SimpleNamespace(iter=12))
    assert resumed.counter.bad == {
        '/d/a.jpg': 'truncated',
        '/d/b.jpg': 'zero bytes',
    }
    assert resumed.counter.samples == 48
    # load_from (iteration 0) starts counting afresh
    fresh = BadFileSummaryHook()
    fresh.after_load_checkpoint(None, checkpoint)
    fresh.before_train(types.SimpleNamespace(iter=0))
    assert fresh.counter.bad == {} and fresh.counter.samples == 0


def test_iteration_loop_builds_without_starting_the_loader():
    """mmengine's IterBasedTrainLoop iterates the loader when built (its
    workers start, a base seed is drawn from torch's generator)."""
    runner = types.SimpleNamespace(
        visualizer=types.SimpleNamespace(dataset_meta=None), seed=0
    )
    loader = DataLoader(list(range(4)), batch_size=2)
    before = torch.get_rng_state()
    loop = ResumableIterBasedTrainLoop(runner, loader, max_iters=4)
    assert torch.equal(torch.get_rng_state(), before)
    assert loop.max_iters == 4 and loop.resume_batches == 0
