"""mmssl.apis.train: the config preparation tools/train.py and Python share."""

import importlib.util
import os.path as osp

import pytest
from mmengine.config import Config

from mmssl.apis import prepare_train_cfg, scale_lr
from mmssl.apis.train import add_vis_backend
from mmssl.config import load_config
from mmssl.errors import TrainConfigError
from mmssl.registry import RUNNERS
from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')


def _lr_cfg(**auto):
    return Config(
        dict(
            train_dataloader=dict(batch_size=16),
            optim_wrapper=dict(optimizer=dict(type='AdamW', lr=0.004)),
            auto_scale_lr=dict(base_batch_size=64, **auto),
        )
    )


@pytest.mark.parametrize(
    'auto, flag, lr, rule, source',
    [
        # DINOv2 configs: bare --auto-scale-lr takes the config's sqrt rule:
        # sqrt(16 / 64) = 0.5
        (dict(rule='sqrt'), True, 0.002, 'sqrt', "config's auto_scale_lr"),
        # the command line wins over the config: 16 / 64 = 0.25
        (dict(rule='sqrt'), 'linear', 0.001, 'linear', 'command line'),
        (dict(), True, 0.001, 'linear', 'the default'),
        (dict(rule='sqrt', enable=True), None, 0.002, 'sqrt', 'config'),
    ],
)
def test_scale_lr_uses_the_config_rule_and_says_so(
    auto, flag, lr, rule, source
):
    cfg = _lr_cfg(**auto)
    lines = scale_lr(cfg, 1, flag)
    assert cfg.optim_wrapper.optimizer.lr == pytest.approx(lr, rel=1e-12)
    assert f'rule={rule},' in lines[0] and source in lines[0]
    assert cfg.auto_scale_lr.enable is False  # mmengine must not rescale


def test_scale_lr_off_without_flag_or_enable():
    cfg = _lr_cfg(rule='sqrt')
    assert scale_lr(cfg, 4, None) == []
    assert cfg.optim_wrapper.optimizer.lr == 0.004


def test_vis_backend_needs_its_package(monkeypatch):
    cfg = Config(
        dict(
            work_dir='wd',
            visualizer=dict(
                type='UniversalVisualizer',
                vis_backends=[dict(type='LocalVisBackend')],
            ),
        )
    )
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: None)
    with pytest.raises(TrainConfigError, match='pip install tensorboard'):
        add_vis_backend(cfg, 'tensorboard')
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: object())
    add_vis_backend(cfg, 'wandb')
    add_vis_backend(cfg, 'wandb')  # once only
    types = [b['type'] for b in cfg.visualizer.vis_backends]
    assert types == ['LocalVisBackend', 'WandbVisBackend']
    with pytest.raises(TrainConfigError, match='choose from'):
        add_vis_backend(cfg, 'mlflow')


def _hooks(runner):
    return [(type(h).__name__, h.priority) for h in runner.hooks]


def test_prepared_cfg_builds_the_cli_runner(demo_data_root, tmp_path):
    """prepare_train_cfg + RUNNERS.build == tools/train.py (--dry-run)."""
    train_tool = load_tool('train.py')

    options = {
        'train_dataloader.dataset.data_root': f'{demo_data_root}/train',
        'train_dataloader.dataset.indices': 16,
        'train_dataloader.batch_size': 8,
        'train_dataloader.num_workers': 0,
        'train_dataloader.persistent_workers': False,
        'auto_scale_lr.base_batch_size': 64,
    }
    wd = str(tmp_path / 'wd')
    cli = train_tool.main(
        [DEMO, '--work-dir', wd, '--auto-scale-lr', '--dry-run', '--seed']
        + ['1', '--cfg-options']
        + [f'{k}={v}' for k, v in options.items()]
        + ['experiment_name=cli']
    )
    cfg = prepare_train_cfg(
        DEMO,
        work_dir=wd,
        auto_scale_lr=True,
        seed=1,
        cfg_options=dict(options, experiment_name='api'),
        allow_new_keys=True,
    )
    runner = RUNNERS.build(cfg)
    assert type(runner) is type(cli) and type(cli).__name__ == 'SSLRunner'
    assert _hooks(runner) == _hooks(cli)
    assert 'BaseLRLogHook' in dict(_hooks(runner))
    assert runner.work_dir == cli.work_dir == osp.abspath(wd)
    # 8 / 64 linear (the demo config has no rule): 0.1 * 0.125
    assert cfg.optim_wrapper.optimizer.lr == pytest.approx(0.0125)
    assert cli.optim_wrapper.optimizer.defaults['lr'] == pytest.approx(0.0125)
    assert runner.seed == cli.seed == 1


def test_dry_run_of_an_iteration_loop_names_no_epochs(
    demo_data_root, tmp_path, capsys
):
    """``--max-iters`` builds an iteration-based loop (mmengine gives it
    ``max_epochs == 1``, which the dry run used to print as "1 epochs")."""
    train_tool = load_tool('train.py')

    options = [
        f'train_dataloader.dataset.data_root={demo_data_root}/train',
        'train_dataloader.dataset.indices=16',
        'train_dataloader.batch_size=8',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
    ]
    wd = str(tmp_path / 'wd')
    train_tool.main(
        [DEMO, '--work-dir', wd, '--dry-run', '--max-iters', '5']
        + ['--cfg-options', *options]
    )
    out = capsys.readouterr().out
    assert 'schedule: 5 iterations (iteration-based)\n' in out
    assert 'epochs' not in out.split('schedule:')[1].split('\n')[0]


@pytest.mark.parametrize(
    'config, name',
    [
        ('configs/npid/npid_resnet18-w16_1xb64-4e_demo.py', 'NPID'),
        ('configs/odc/odc_resnet18-w16_1xb64-4e_demo.py', 'ODC'),
        (
            'configs/deepcluster/deepcluster_resnet18-w16_1xb64-4e_demo.py',
            'DeepCluster',
        ),
    ],
)
def test_memory_bank_of_the_wrong_size_stops_before_training(
    config, name, demo_data_root, tmp_path
):
    """A buffer with one row per image (``model.num_samples``) that does
    not match the training set stops the run before the first step and
    names the size to set; the right size builds. (Before, NPID stopped
    at the first index past the bank, without the size, and a bank too
    long trained on rows no image updates.)"""
    from mmssl.engine.preflight import build_train_runner

    options = {
        'train_dataloader.dataset.data_root': f'{demo_data_root}/train',
        'train_dataloader.dataset.indices': 40,
        'train_dataloader.batch_size': 8,
        'train_dataloader.num_workers': 0,
        'train_dataloader.persistent_workers': False,
    }
    for num in (1438, 39):  # the demo's digits count; one short
        cfg = prepare_train_cfg(
            osp.join(ROOT, config),
            work_dir=str(tmp_path / f'wd{num}'),
            cfg_options=dict(options, **{'model.num_samples': num}),
        )
        with pytest.raises(TrainConfigError) as info:
            build_train_runner(cfg)
        assert f'model.num_samples={num}, but the training set has 40 ' in (
            str(info.value)
        )
        assert name in str(info.value)
        assert str(info.value).endswith('--cfg-options model.num_samples=40')
    cfg = prepare_train_cfg(
        osp.join(ROOT, config),
        work_dir=str(tmp_path / 'wd40'),
        cfg_options=dict(options, **{'model.num_samples': 40}),
    )
    assert build_train_runner(cfg).model.num_samples == 40


@pytest.mark.parametrize('without', ['key', 'None'])
def test_a_config_without_randomness_runs(without, demo_data_root, tmp_path):
    """No ``randomness`` (or ``randomness=None``): mmengine draws a seed
    (prepare_train_cfg once passed ``{}`` and the Runner raised a raw
    TypeError: set_randomness() missing 'seed')."""
    options = {
        'train_dataloader.dataset.data_root': f'{demo_data_root}/train',
        'train_dataloader.num_workers': 0,
        'train_dataloader.persistent_workers': False,
    }
    path = DEMO
    if without == 'key':
        written = load_config(DEMO)
        written.pop('randomness', None)
        path = str(tmp_path / 'no_randomness.py')
        written.dump(path)
        assert 'randomness' not in load_config(path)
    else:
        options['randomness'] = None
    cfg = prepare_train_cfg(
        path, work_dir=str(tmp_path / 'wd'), cfg_options=options
    )
    runner = RUNNERS.build(cfg)
    assert isinstance(runner.seed, int)
