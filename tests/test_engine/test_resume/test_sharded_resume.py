"""Sharded (DCP) checkpoints through the runner's checkpoint hook, resumed
by ``--resume`` on another world size: 1 process saves folders
(``sharded=True``), 2 FSDP2 gloo ranks resume the newest complete one
(``--resume``) and save again (``sharded='auto'``), 1 process resumes
that (``--resume FOLDER``). At every hop the model and AdamW state after
the resume equal, bit for bit, those the saving run ended with; the
iteration and the loop position carry over. With FSDP2,
``sharded=False`` is refused when the runner is built."""

import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

from tests.support.dist import file_init_method, init_gloo, spawn

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
DEMO = osp.join(
    ROOT, 'configs', 'dinov2', 'dinov2_vit-tiny-p4_1xb64-10e_demo.py'
)
WORLD = 2


def _cfg(data_root, work_dir, sharded='auto', epochs=1, ranks=1):
    cfg = Config.fromfile(DEMO)
    cfg.work_dir = str(work_dir)
    loader = cfg.train_dataloader
    loader.dataset.data_root = osp.join(data_root, 'train')
    loader.dataset.indices = 8
    loader.dataset.pipeline[1].num_local_crops = 1
    loader.update(batch_size=2, num_workers=0, persistent_workers=False)
    cfg.model.backbone.arch = dict(
        embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=32
    )
    cfg.model.head.update(hidden_channels=16, bottleneck_channels=8)
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=epochs)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.test_cfg = cfg.test_dataloader = cfg.test_evaluator = None
    cfg.default_hooks.checkpoint = dict(
        type='AtomicCheckpointHook',
        interval=2,
        by_epoch=False,
        max_keep_ckpts=1,
        sharded=sharded,
    )
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=100)
    cfg.auto_scale_lr = None
    if ranks > 1:
        cfg.launcher = 'pytorch'
        cfg.env_cfg.dist_cfg = dict(backend='gloo')
        cfg.model_wrapper_cfg = dict(type='MMFullyShard')
    return cfg


def _full(value):
    """Plain CPU tensors, DTensor shards gathered (a collective)."""
    if hasattr(value, 'full_tensor'):
        return value.full_tensor().detach().cpu().clone()
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, dict):
        return {k: _full(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_full(v) for v in value)
    return value


def _state(runner):
    from mmssl.checkpoint import training_state

    model = getattr(runner.model, 'module', runner.model)
    state = training_state(model, runner.optim_wrapper.optimizer)
    return dict(state=_full(state), iter=runner.iter)


class _Capture(Hook):
    """Saves the state right after the resume (``before_train``)."""

    priority = 'LOWEST'

    def __init__(self, path):
        self.path = path

    def before_train(self, runner):
        from mmengine.dist import is_main_process

        out = _state(runner)
        out['resume_at'] = runner.train_loop._resume_at
        if is_main_process():
            torch.save(out, self.path)


def _train(cfg, resume, capture=None):
    from mmssl.engine.resume.options import set_resume
    from mmssl.engine.runner import build_runner

    set_resume(cfg, resume)
    runner = build_runner(cfg)
    if capture is not None:
        runner.register_hook(_Capture(capture))
    runner.train()
    return runner


def _worker(rank, init_method, data_root, work_dir):
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD)
    )
    init_gloo(rank, WORLD, init_method)
    from mmssl.engine.runner import build_runner
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    refused = _cfg(data_root, work_dir, sharded=False, ranks=WORLD)
    try:  # (pytest.raises would fail with a BaseException: no traceback)
        build_runner(refused)
    except ValueError as exc:
        assert 'default_hooks.checkpoint.sharded=' in str(exc), exc
    else:
        raise AssertionError('sharded=False with FSDP2 was not refused')
    cfg = _cfg(data_root, work_dir, epochs=2, ranks=WORLD)
    runner = _train(cfg, True, osp.join(work_dir, 'resumed_ws2.pth'))
    assert runner.sharded_checkpoints
    out = _state(runner)
    if rank == 0:
        torch.save(out, osp.join(work_dir, 'saved_ws2.pth'))


def _assert_equal(a, b, where=''):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_equal(a[k], b[k], f'{where}/{k}')
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal(x, y, f'{where}/{i}')
    elif hasattr(a, 'shape'):  # numpy RNG state
        assert (a == b).all(), where
    else:
        assert a == b, where


@pytest.mark.slow
def test_sharded_checkpoints_resume_on_other_world_sizes(
    demo_data_root, tmp_path
):
    from mmssl.checkpoint import load_runner_state

    work = tmp_path / 'work'
    # 1 process, 4 iterations: folders iter_2.pth/, iter_4.pth/; one kept
    runner = _train(_cfg(demo_data_root, work, sharded=True), None)
    saved_ws1 = _state(runner)
    assert saved_ws1['iter'] == 4
    assert saved_ws1['state']['optimizer']['state']  # AdamW moments
    assert osp.isfile(work / 'iter_4.pth' / 'runner_state.pth')
    assert not osp.exists(work / 'iter_2.pth')  # max_keep_ckpts=1
    assert (work / 'last_checkpoint').read_text().endswith('iter_4.pth')
    # newer, incomplete folders that --resume must pass over
    os.makedirs(work / 'iter_98.pth.tmp')
    os.makedirs(work / 'iter_99.pth')

    spawn(_worker, file_init_method(tmp_path), demo_data_root, str(work))
    resumed = torch.load(work / 'resumed_ws2.pth', weights_only=False)
    assert resumed['iter'] == 4
    _assert_equal(resumed['state'], saved_ws1['state'], '1->2')
    # 2 ranks: 2 batches per epoch; iteration 4 ended epoch 0 there
    assert resumed['resume_at'] == (1, 0, None)
    saved_ws2 = torch.load(work / 'saved_ws2.pth', weights_only=False)
    assert saved_ws2['iter'] == 6
    assert not torch.equal(  # the 2 ranks trained
        saved_ws2['state']['state_dict']['backbone.cls_token'],
        saved_ws1['state']['state_dict']['backbone.cls_token'],
    )

    # load_from a folder (no resume): its weights
    from mmssl.engine.runner import build_runner

    runner = build_runner(_cfg(demo_data_root, tmp_path / 'other'))
    runner.load_checkpoint(str(work / 'iter_6.pth'))
    _assert_equal(
        _full(runner.model.state_dict()),
        saved_ws2['state']['state_dict'],
        'load_from',
    )
    # 1 process resumes the folder the 2 FSDP2 ranks wrote, named
    # explicitly (--resume work/iter_6.pth)
    loop = load_runner_state(str(work / 'iter_6.pth'))['loop_state']
    assert (loop['epoch'], loop['batches']) == (1, 2)
    capture = tmp_path / 'resumed_ws1.pth'
    cfg = _cfg(demo_data_root, work, epochs=2)
    _train(cfg, str(work / 'iter_6.pth'), str(capture))
    assert cfg.load_from.endswith('iter_6.pth')
    # without FSDP2, 'auto' saves files again; the folder is pruned
    assert osp.isfile(work / 'iter_8.pth')
    assert not osp.exists(work / 'iter_6.pth')
    resumed = torch.load(capture, weights_only=False)
    assert resumed['iter'] == 6
    _assert_equal(resumed['state'], saved_ws2['state'], '2->1')
    # here 4 batches per epoch: continue in epoch 1 at batch 2, with the
    # random states of the checkpoint
    _assert_equal(resumed['resume_at'], (1, 2, loop['rng']), 'position')


def test_sharded_run_refuses_published_keys(demo_data_root, tmp_path):
    """mmengine's hook would load the last checkpoint as a file after
    training: refused when the runner is built, naming the converter."""
    from mmssl.engine.runner import build_runner

    cfg = _cfg(demo_data_root, tmp_path, sharded=True)
    cfg.default_hooks.checkpoint.published_keys = ['meta', 'state_dict']
    with pytest.raises(ValueError, match='dcp_to_file.py'):
        build_runner(cfg)
    cfg.default_hooks.checkpoint.sharded = False  # files: allowed
    assert not build_runner(cfg).sharded_checkpoints
