"""End-to-end DINO-family demo training: learning, and 2-process DDP."""

import math
import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

from mmssl.engine.runner import build_runner
from tests.support.dist import file_init_method, init_gloo, spawn
from tests.support.learns import StopAfter

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
DEMO = osp.join(
    ROOT, 'configs', 'dinov2', 'dinov2_vit-tiny-p4_1xb64-10e_demo.py'
)


def _cfg(data_root, work_dir, config=DEMO, **opts):
    cfg = Config.fromfile(config)
    cfg.work_dir = str(work_dir)
    cfg.train_dataloader.dataset.data_root = osp.join(data_root, 'train')
    cfg.train_dataloader.num_workers = 0
    cfg.train_dataloader.persistent_workers = False
    for key in ('val_dataloader', 'test_dataloader'):
        cfg[key].dataset.bank.data_root = data_root
        cfg[key].dataset.query.data_root = data_root
        cfg[key].num_workers = 0
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=5)
    cfg.merge_from_dict(opts)
    return cfg


def _knn_init_and_trained(
    config, data_root, tmp_path, stop_after=None, **opts
):
    """kNN top-1 of the demo network at random init and after the demo
    (with ``opts`` merged into its config; stopped after ``stop_after``
    epochs if given)."""
    init_runner = build_runner(
        _cfg(data_root, tmp_path / 'init', config=config)
    )
    init_runner.model.init_weights()
    init_top1 = init_runner.test()['knn/top1']
    cfg = _cfg(data_root, tmp_path / 'train', config=config, **opts)
    # the demo's end-of-training kNN is the test() below: run it once
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    runner = build_runner(cfg)
    if stop_after is not None:
        runner.register_hook(StopAfter(stop_after))
    runner.train()
    if stop_after is not None:
        assert runner.epoch == stop_after, runner.epoch
    return init_top1, runner.test()['knn/top1']


@pytest.mark.slow
def test_dinov2_demo_learns(demo_data_root, tmp_path):
    """The DINOv2 demo, stopped after epoch 5 of its 10 (110 of 220
    iterations, its schedules unchanged), beats the same network at random
    init (57.66 top-1, a meaningful baseline: no LayerScale) clearly:
    measured (one run, kNN after each epoch with every RNG state restored
    around it) 55.43 / 60.72 / 62.95 / 63.23 / 64.35 after epochs 2 / 4 /
    5 / 6 / 7 (64.62 after 7 and 64.35 after all 10 in the test before it
    was shortened; configs/dinov2/README.md). Broken: with lr 0 it ends
    at 57.66, random init, and fails."""
    init_top1, top1 = _knn_init_and_trained(
        DEMO, demo_data_root, tmp_path, stop_after=5
    )
    assert init_top1 > 40.0, init_top1  # not a degenerate random network
    assert top1 > init_top1 + 3.0, (init_top1, top1)


@pytest.mark.slow
def test_ibot_demo_learns(demo_data_root, tmp_path):
    """The iBOT demo, stopped after epoch 5 of its 10 (110 of 220
    iterations, its schedules unchanged), beats the same network at random
    init (62.67 top-1): 64.62 measured with the demo's reference step
    (per-module clipping, dinov2's decay rule, the last layer frozen by lr
    0), the same 64.62 with the mmpretrain decay rule and drop_grad, and
    64.07 with DINO v1's rules (per-tensor clip as well); see
    docs/dev/dino_fixed_point_history.md. Broken: with lr 0 it ends at
    62.67, random init, and fails."""
    demo = osp.join(
        ROOT, 'configs', 'ibot', 'ibot_vit-tiny-p4_1xb64-10e_demo.py'
    )
    init_top1, top1 = _knn_init_and_trained(
        demo, demo_data_root, tmp_path, stop_after=5
    )
    assert init_top1 > 40.0, init_top1
    # the DINO loss sits at ln K here (docs/en/loss_not_decreasing.md):
    # what iBOT gains comes from its masked-patch term
    assert top1 > init_top1 + 1.0, (init_top1, top1)


class _Copies(Hook):
    """Copies all model parameters into ``log[where]``: after each
    optimiser step (``'stepped'``, priority HIGHEST, before the EMA hook)
    or after each EMA update (``'ema'``, LOWEST); the first also copies
    them once after the weights are initialised (``log['start']``), after
    adding ``teacher_noise`` * N(0, 1) to the teacher if given."""

    def __init__(self, log: dict, where: str, teacher_noise: float = 0.0):
        self.log, self.where = log, where
        self.teacher_noise = teacher_noise
        log[where] = []

    @staticmethod
    def _copy(runner):
        return {
            k: v.detach().clone() for k, v in runner.model.named_parameters()
        }

    def before_train(self, runner):
        if self.where != 'stepped':
            return
        with torch.no_grad():
            for p in runner.model.teacher.parameters():
                p.add_(self.teacher_noise * torch.randn_like(p))
        self.log['start'] = self._copy(runner)

    def after_train_iter(self, runner, batch_idx, data_batch, outputs):
        self.log[self.where].append((runner.iter, self._copy(runner)))


def _runner_with_copies(cfg, teacher_noise=0.0):
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    runner = build_runner(cfg)
    log = {}
    runner.register_hook(
        _Copies(log, 'stepped', teacher_noise), priority='HIGHEST'
    )
    runner.register_hook(_Copies(log, 'ema'), priority='LOWEST')
    return runner, log


def test_nan_loss_skips_steps_then_stops(demo_data_root, tmp_path):
    """Injected NaN loss: no student step, no teacher update, clear stop."""
    cfg = _cfg(
        demo_data_root,
        tmp_path,
        **{
            'model.loss_weights.dino': float('nan'),
            'optim_wrapper.max_consecutive_skips': 2,
            'train_dataloader.batch_size': 2,
            'train_dataloader.dataset.indices': 8,
            # the fused AdamW skips on the device; the host reads the
            # skip count (and stops) at the logger's interval
            'default_hooks.logger.interval': 2,
        },
    )
    runner, log = _runner_with_copies(cfg)
    with pytest.raises(RuntimeError, match='max_consecutive_skips=2'):
        runner.train()
    assert runner.optim_wrapper.total_skips == 2
    # the first skipped step ends its iteration, the second one stops
    assert [it for it, _ in log['stepped']] == [0]
    # student and teacher each equal their own weights after init
    start = log['start']
    assert any(k.startswith('teacher.') for k in start)
    assert any(k.startswith('backbone.') for k in start)
    for name, p in runner.model.named_parameters():
        assert torch.equal(p, start[name]), name
    assert runner.message_hub.get_scalar('train/nan_skips').current() == 2


def test_teacher_is_ema_of_stepped_student(demo_data_root, tmp_path):
    """After each step, teacher = m * teacher + (1 - m) * new student with
    DINO's cosine m (0.99 -> 1 over the run), and the student moved. The
    teacher starts away from the student, so that m matters."""
    cfg = _cfg(
        demo_data_root,
        tmp_path,
        **{
            'train_dataloader.batch_size': 4,
            'train_dataloader.dataset.indices': 8,
            'train_cfg.max_epochs': 1,
        },
    )
    runner, log = _runner_with_copies(cfg, teacher_noise=0.1)
    runner.train()
    assert [it for it, _ in log['stepped']] == [0, 1]
    before = log['start']
    for (it, stepped), (_, ema) in zip(log['stepped'], log['ema']):
        m = 1.0 - 0.01 * (1 + math.cos(math.pi * it / 2)) / 2
        moved = []
        for name, t in ema.items():
            if not name.startswith('teacher.'):
                continue
            student = name[len('teacher.') :]
            torch.testing.assert_close(
                t, m * before[name] + (1 - m) * stepped[student], msg=name
            )
            moved.append(not torch.equal(stepped[student], before[student]))
        assert sum(moved) > 0.5 * len(moved), moved  # the student stepped
        before = ema


def _worker(rank, world_size, init_method, data_root, work_dir):
    os.environ.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size)
    )
    # mmengine's own init_dist calls torch.cuda.set_device: on CPU the
    # gloo group is created here and the Runner reuses it.
    init_gloo(rank, world_size, init_method)
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    cfg = _cfg(
        data_root,
        work_dir,
        **{
            'launcher': 'pytorch',
            'env_cfg.dist_cfg.backend': 'gloo',
            'model.backbone.with_cp': True,
            'model.backbone.drop_path_rate': 0.1,
            # two local crops (the demo has four): the student backbone
            # still runs twice per step
            'train_dataloader.dataset.pipeline.1.num_local_crops': 2,
            'train_dataloader.batch_size': 4,
            'train_dataloader.dataset.indices': 16,
            'train_cfg.max_epochs': 1,
            'custom_hooks.2.freeze_epochs': 0,
        },
    )
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    # CPU modules: DDP without device_ids
    cfg.model_wrapper_cfg = dict(
        type='MMDistributedDataParallel', device_ids=None
    )
    runner = build_runner(cfg)
    runner.train()
    model = runner.model.module
    torch.save(
        {k: v.detach().cpu() for k, v in model.state_dict().items()},
        osp.join(str(work_dir), f'rank{rank}.pth'),
    )


@pytest.mark.slow
def test_dinov2_demo_two_process_gloo_with_cp(demo_data_root, tmp_path):
    """2-process CPU DDP (gloo) with activation checkpointing and a
    multi-crop student (the backbone runs twice per step): trains, and
    both ranks end with identical student, teacher and loss centres."""
    spawn(_worker, 2, file_init_method(tmp_path), demo_data_root, tmp_path)
    s0 = torch.load(tmp_path / 'rank0.pth')
    s1 = torch.load(tmp_path / 'rank1.pth')
    assert s0.keys() == s1.keys()
    for k in s0:
        torch.testing.assert_close(s0[k], s1[k], msg=k)
    init = build_runner(_cfg(demo_data_root, tmp_path / 'x')).model
    # the teacher moved away from its initial copy of the student
    assert any(
        not torch.equal(v, s0['teacher.' + k])
        for k, v in init.teacher.state_dict().items()
        if 'teacher.' + k in s0
    )
