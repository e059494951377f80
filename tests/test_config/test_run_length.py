"""Schedules as run fractions ('10%'), resolved when the runner is built."""

import glob
import importlib.util
import os.path as osp

import pytest
from mmengine.registry import PARAM_SCHEDULERS

from mmssl.config import load_config
from mmssl.config.options import merge_cfg_options
from mmssl.config.run_length import (
    boundary,
    parse_fraction,
    resolve_run_fractions,
    set_run_length,
)
from mmssl.config.scheduler_steps import schedulers_for_run
from mmssl.engine.hooks import FreezeLastLayerHook, TeacherTempWarmupHook
from mmssl.engine.runner import SSLRunner

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)


def _train_tool():
    """tools/train.py as a module (tools/ is not a package)."""
    path = osp.join(ROOT, 'tools', 'train.py')
    spec = importlib.util.spec_from_file_location('train_tool_rl', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cfg(train_cfg, **extra):
    cfg = dict(
        train_cfg=train_cfg,
        param_scheduler=[
            dict(
                type='LinearLR',
                by_epoch=True,
                begin=0,
                end='10%',
                convert_to_iter_based=True,
            ),
            dict(type='CosineAnnealingLR', begin='10%', end='100%'),
            dict(type='MultiStepLR', milestones=['50%', '75%']),
        ],
        custom_hooks=[
            dict(type='TeacherTempWarmupHook', warmup_epochs='30%'),
            dict(type='FreezeLastLayerHook', freeze_epochs=1),
        ],
        default_hooks=dict(checkpoint=dict(interval='5%')),
    )
    cfg.update(extra)
    return cfg


def test_parse_fraction():
    assert parse_fraction('10%') == pytest.approx(0.1)
    assert parse_fraction(' 2.5 %') == pytest.approx(0.025)
    assert parse_fraction(10) is None and parse_fraction('10') is None
    with pytest.raises(ValueError, match='at most the whole run'):
        parse_fraction('150%')


def test_parse_ratio():
    assert parse_fraction('1/300') == 1 / 300
    assert parse_fraction(' 2 / 15 ') == 2 / 15
    assert parse_fraction('1/1') == 1.0
    assert parse_fraction('a/b') is None and parse_fraction('1/2/3') is None
    with pytest.raises(ValueError, match='at most the whole run'):
        parse_fraction('3/2')
    with pytest.raises(ValueError, match='b > 0'):
        parse_fraction('1/0')


def test_ratio_resolves_as_the_long_percentage_it_replaces():
    """'1/300' of 300 epochs is a checkpoint every epoch, as
    '0.3333333333333333%' was; '2/15' a warm-up of 40 epochs."""
    for ratio, percent in (
        ('1/300', '0.3333333333333333%'),
        ('1/30', '3.3333333333333335%'),
        ('2/15', '13.333333333333334%'),
    ):
        a, b = _cfg(dict(max_epochs=300)), _cfg(dict(max_epochs=300))
        a['default_hooks']['checkpoint']['interval'] = ratio
        b['default_hooks']['checkpoint']['interval'] = percent
        a['param_scheduler'][0]['end'] = ratio
        b['param_scheduler'][0]['end'] = percent
        resolve_run_fractions(a)
        resolve_run_fractions(b)
        assert a == b
    assert a['default_hooks']['checkpoint']['interval'] == 40
    assert a['param_scheduler'][0]['end'] == 40


def test_epoch_loop_fractions_become_epochs():
    cfg = _cfg(dict(max_epochs=20, val_interval='50%'))
    notes = resolve_run_fractions(cfg)
    warmup, cosine, steps = cfg['param_scheduler']
    # converted to iterations by mmengine: fractional epochs are kept
    assert (warmup['begin'], warmup['end']) == (0, 2)
    assert isinstance(warmup['end'], int)
    # per-epoch schedulers count whole epochs
    assert (cosine['begin'], cosine['end']) == (2, 20)
    assert steps['milestones'] == [10, 15]
    assert cfg['custom_hooks'][0]['warmup_epochs'] == 6
    assert cfg['custom_hooks'][1]['freeze_epochs'] == 1  # numbers stay
    assert cfg['default_hooks']['checkpoint']['interval'] == 1
    assert cfg['train_cfg']['val_interval'] == 10
    assert any('param_scheduler[0].end' in n for n in notes)


def test_short_run_keeps_fractional_warmups_and_intervals_of_one():
    cfg = _cfg(dict(max_epochs=2))
    resolve_run_fractions(cfg)
    assert cfg['param_scheduler'][0]['end'] == pytest.approx(0.2)
    assert cfg['custom_hooks'][0]['warmup_epochs'] == pytest.approx(0.6)
    assert cfg['default_hooks']['checkpoint']['interval'] == 1


def test_iteration_loop_counts_iterations():
    cfg = _cfg(dict(type='IterBasedTrainLoop', max_iters=1000))
    resolve_run_fractions(cfg)
    warmup, cosine, steps = cfg['param_scheduler']
    assert (warmup['end'], warmup['by_epoch']) == (100, False)
    assert 'convert_to_iter_based' not in warmup
    assert (cosine['begin'], cosine['end'], cosine['by_epoch']) == (
        100,
        1000,
        False,
    )
    assert steps['milestones'] == [500, 750]
    hook = cfg['custom_hooks'][0]
    assert hook == dict(type='TeacherTempWarmupHook', warmup_iters=300)
    checkpoint = cfg['default_hooks']['checkpoint']
    assert checkpoint == dict(interval=50, by_epoch=False)


def test_unresolvable_fractions_are_errors():
    with pytest.raises(ValueError, match='max_epochs'):
        resolve_run_fractions(_cfg({}))
    cfg = dict(
        train_cfg=dict(max_epochs=5),
        custom_hooks=[dict(type='FreezeLastLayerHook', freeze_iters='5%')],
    )
    with pytest.raises(ValueError, match='freeze_iters'):
        resolve_run_fractions(cfg)
    cfg = dict(
        train_cfg=dict(max_epochs=5),
        param_scheduler=[dict(type='LinearLR', by_epoch=False, end='5%')],
    )
    with pytest.raises(ValueError, match='by_epoch=False'):
        resolve_run_fractions(cfg)


def test_set_run_length():
    cfg = dict(train_cfg=dict(type='EpochBasedTrainLoop', max_epochs=100))
    assert '3 epochs' in set_run_length(cfg, max_epochs=3)
    assert cfg['train_cfg']['max_epochs'] == 3
    cfg = dict(train_cfg=dict(max_epochs=100, val_interval='100%'))
    set_run_length(cfg, max_iters=40)
    assert cfg['train_cfg'] == dict(
        type='IterBasedTrainLoop', max_iters=40, val_interval='100%'
    )
    assert cfg['log_processor'] == dict(by_epoch=False)
    assert set_run_length(cfg) is None
    with pytest.raises(ValueError, match='not both'):
        set_run_length(cfg, 1, 1)


def test_boundary_keeps_inner_points_inside_the_run():
    assert boundary(0.3, 3) == 1  # a 10% warm-up of 3 iterations
    assert boundary(2.9, 3) == 2  # the last phase keeps an iteration
    assert boundary(1.5, 20) == 2 and boundary(7.0, 20) == 7
    assert boundary(0.1, 1) == 0 and boundary(0.9, 1) == 0  # 1 iteration
    assert boundary(0, 5) == 0 and boundary(5, 5) == 5
    assert boundary(40.0, 20) == 40  # beyond the run: only rounded


def test_schedulers_for_run_in_short_runs():
    scheds = [
        dict(type='LinearLR', end=0.05, convert_to_iter_based=True),
        dict(type='CosineAnnealingLR', begin=0.1, end=2, T_max=1.9),
        dict(type='CosineAnnealingLR', begin=0.5, end=2.0, by_epoch=True),
        dict(type='ConstantLR', begin=1, end=2, convert_to_iter_based=True),
        dict(type='CosineAnnealingLR', end=2, convert_to_iter_based=True),
    ]
    out, notes = schedulers_for_run(scheds, 7, 14)
    warmup, cosine, per_epoch, ramp, whole = out
    # 0.35 iteration -> 1, then one more so that it ends (back at 1.0)
    assert warmup == dict(type='LinearLR', end=2, by_epoch=False)
    assert cosine is scheds[1]  # not convert_to_iter_based: left alone
    assert per_epoch is scheds[2]
    # ramps are converted here (7 -> 14), whole epochs of others by mmengine
    assert ramp == dict(type='ConstantLR', begin=7, end=14, by_epoch=False)
    assert whole is scheds[4]
    assert len(notes) == 1 and 'LinearLR over one iteration' in notes[0]
    assert 'keep its start factor for the whole run' in notes[0]
    converted, _ = schedulers_for_run(
        dict(
            type='CosineAnnealingLR',
            begin=0.5,
            end=2,
            T_max=1.5,
            convert_to_iter_based=True,
        ),
        10,
        20,
    )
    assert (converted['begin'], converted['end'], converted['T_max']) == (
        5,
        20,
        15,
    )
    # a 1-iteration run: the warm-up phase is empty and dropped
    iters = [
        dict(type='LinearLR', begin=0, end=0, by_epoch=False),
        dict(type='CosineAnnealingLR', begin=0, end=1, by_epoch=False),
    ]
    out, notes = schedulers_for_run({'a': iters}, 1, 1)
    assert out == {'a': [iters[1]]} and 'dropped' in notes[0]
    assert schedulers_for_run(iters[0], 1, 1)[0] == []  # a lone one


def test_fractional_epoch_hooks_count_iterations():
    class _Runner:
        epoch, iter = 0, 0
        train_dataloader = range(10)

    runner = _Runner()
    temp = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=0.5)
    freeze = FreezeLastLayerHook(freeze_epochs=0.3)
    runner.iter = 2
    assert temp.value(runner) == pytest.approx(0.04 + 0.03 * 2 / 4)
    assert freeze.is_frozen(runner)
    runner.iter = 3
    assert not freeze.is_frozen(runner)
    runner.iter = 4
    assert temp.value(runner) == pytest.approx(0.07)
    # 0.35 epochs of 10 iterations: a 4-iteration warm-up (rounded)
    rounded = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=0.35)
    runner.iter = 2
    assert rounded.value(runner) == pytest.approx(0.04 + 0.03 * 2 / 3)
    iters = TeacherTempWarmupHook(0.04, 0.07, warmup_iters=3)
    runner.iter = 1
    assert iters.value(runner) == pytest.approx(0.055)
    # a short run (20 iterations): 0.04 and 0.01 epochs (0.4 and 0.1
    # iterations) keep one iteration, as the lr warm-up does
    runner.max_iters, runner.iter = 20, 0
    short = TeacherTempWarmupHook(0.04, 0.07, warmup_epochs=0.04)
    freeze = FreezeLastLayerHook(freeze_epochs=0.01)
    assert short.value(runner) == pytest.approx(0.04)
    assert freeze.is_frozen(runner)
    runner.iter = 1
    assert short.value(runner) == pytest.approx(0.07)
    assert not freeze.is_frozen(runner)


# the presets, and the ImageNet recipes that run on any folder as they are
CUSTOM = sorted(
    glob.glob(osp.join(ROOT, 'configs/dinov2/*custom*.py'))
    + glob.glob(osp.join(ROOT, 'configs/dinov2/*_vit-[slg]14_8xb128*.py'))
)


@pytest.mark.parametrize('config', CUSTOM, ids=osp.basename)
def test_max_epochs_alone_moves_every_schedule(config, tmp_path):
    """`--max-epochs 2` (tools/train.py) on a DINOv2 custom preset: every
    scheduler, warm-up and interval of the built runner ends in the run.
    """
    train = _train_tool()
    args = train.parse_args(
        [
            config,
            '--max-epochs',
            '2',
            # memory only (a ViT-g twice): the schedule is the same
            '--cfg-options',
            'model.backbone.arch=dict(embed_dims=32, num_layers=2, '
            'num_heads=2, feedforward_channels=64)',
            'model.backbone.img_size=28',
            'model.head.hidden_channels=32',
            'model.head.bottleneck_channels=16',
            'model.head.n_prototypes=64',
            'model.loss.out_dim=64',
            'model.ibot_loss.out_dim=64',
        ]
    )
    cfg = load_config(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    set_run_length(cfg, args.max_epochs, args.max_iters)
    cfg.work_dir = str(tmp_path)
    runner = SSLRunner.from_cfg(cfg)
    epochs, epoch_length = 2, 7
    optim_wrapper = runner.build_optim_wrapper(runner.optim_wrapper)
    ends = []
    # as SSLRunner.build_param_scheduler does once the data is loaded
    scheds, _ = schedulers_for_run(
        runner.param_schedulers, epoch_length, epochs * epoch_length
    )
    for sched_cfg in scheds:
        sched = PARAM_SCHEDULERS.build(
            dict(sched_cfg),
            default_args=dict(
                optimizer=optim_wrapper, epoch_length=epoch_length
            ),
        )
        assert not sched.by_epoch
        assert sched.begin < sched.end <= epochs * epoch_length
        ends.append(sched.end)
    assert max(ends) == epochs * epoch_length
    hooks = {type(h).__name__: h for h in runner.hooks}
    assert 0 < hooks['TeacherTempWarmupHook'].warmup_epochs <= epochs
    assert 0 < hooks['FreezeLastLayerHook'].freeze_epochs <= epochs
    assert hooks['AtomicCheckpointHook'].interval <= epochs
    assert runner._train_loop['max_epochs'] == epochs


def _inherited_configs() -> list:
    """ImageNet configs built on an ``mmpretrain::`` base (on a folder,
    configs/custom/image_folder.py keeps all of them but the dataset:
    tests/test_configs/test_image_folder_config.py)."""
    out = []
    for path in sorted(glob.glob(osp.join(ROOT, 'configs/*/*_in1k*.py'))):
        if 'mmpretrain::' in open(path).read():
            out.append(path)
    return out


#: DeepCluster's published milestone (epoch 400 of 200) never steps.
NO_STEP = ('deepcluster',)


@pytest.mark.parametrize('config', _inherited_configs(), ids=osp.basename)
def test_max_epochs_moves_inherited_schedules(config):
    """`--max-epochs 2` on a config from an mmpretrain base: every lr/wd
    scheduler begins and ends within the 2 epochs, the last at 2, step
    milestones fall within them, and so does the checkpoint interval."""
    args = _train_tool().parse_args([config, '--max-epochs', '2'])
    cfg = load_config(args.config)
    set_run_length(cfg, args.max_epochs, args.max_iters)
    resolve_run_fractions(cfg)
    # the checkpoint interval too (was 1 or 10 epochs)
    assert 1 <= cfg.default_hooks.checkpoint.interval <= 2
    if osp.basename(config).startswith(NO_STEP):
        return  # its MultiStepLR milestone lies after the run
    ends = []
    for sched in cfg.param_scheduler:
        if 'milestones' in sched:  # step schedules: steps within the run
            assert all(1 <= m <= 2 for m in sched['milestones']), sched
            ends.append(2)
            continue
        assert 0 <= sched.get('begin', 0) < sched['end'] <= 2, sched
        assert 'T_max' not in sched  # end - begin, as the run is
        ends.append(sched['end'])
    assert max(ends) == 2
