"""resolve(cfg): the one entry of config handling, and what mmengine's
plain ``Runner.from_cfg`` does with an mmssl config."""

import copy
import os.path as osp

import pytest
from mmengine.config import Config
from mmengine.runner import Runner

from mmssl.config import (
    UnknownConfigKeyError,
    UnresolvedLogProcessor,
    load_config,
    resolve,
)
from mmssl.engine.runner import SSLRunner, build_runner
from mmssl.setup_env import register_all_modules

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')


def _small_cfg() -> Config:
    return Config(
        dict(
            model=dict(
                type='SimCLR',
                backbone=dict(
                    type='ResNet_CIFAR',
                    depth=18,
                    stem_channels=8,
                    base_channels=8,
                ),
                neck=dict(
                    type='NonLinearNeck',
                    in_channels='auto',
                    hid_channels=16,
                    out_channels=8,
                ),
                head=dict(
                    type='ContrastiveHead', loss=dict(type='CrossEntropyLoss')
                ),
            ),
            train_cfg=dict(max_epochs=20),
            param_scheduler=[dict(type='LinearLR', end='10%')],
            log_processor=dict(type='UnresolvedLogProcessor', window_size=4),
        )
    )


def test_resolve_fills_fractions_sizes_and_log_processor():
    register_all_modules()
    cfg = _small_cfg()
    notes = resolve(cfg)
    assert cfg.param_scheduler[0].end == 2  # 10% of 20 epochs
    # ResNet_CIFAR: 8 base channels x 8 (expansion of the last stage) = 64
    assert cfg.model.neck.in_channels == 64
    assert cfg.log_processor == dict(type='LogProcessor', window_size=4)
    assert notes == [
        "run fractions: param_scheduler[0].end='10%' of 20 epochs -> 2",
        "derived sizes: model.neck.in_channels='auto' -> 64",
    ]
    again = copy.deepcopy(cfg)
    assert resolve(again) == []  # idempotent
    assert again.to_dict() == cfg.to_dict()


def test_resolve_refuses_an_unknown_top_level_key():
    cfg = _small_cfg()
    cfg.output_dir = 'x'
    with pytest.raises(UnknownConfigKeyError, match='output_dir'):
        resolve(cfg)
    assert resolve(cfg, check_keys=False)  # the rest still resolves


def test_unresolved_log_processor_names_the_fix():
    with pytest.raises(RuntimeError) as info:
        UnresolvedLogProcessor(window_size=10)
    for fix in ('build_runner', 'RUNNERS.build', 'mmssl.config.resolve'):
        assert fix in str(info.value)


def test_plain_runner_stops_at_once_then_works_once_resolved(tmp_path):
    """mmengine's Runner.from_cfg ignores runner_type: on the demo config it
    used to fail in torch.nn.Linear (in_channels='auto'); now it stops
    before building anything, and builds the resolved config."""
    cfg = load_config(DEMO)
    cfg.work_dir = str(tmp_path)
    with pytest.raises(RuntimeError, match='build_runner'):
        Runner.from_cfg(cfg)
    register_all_modules()
    resolve(cfg)
    runner = Runner.from_cfg(cfg)
    assert type(runner) is Runner
    assert runner.model.neck.fc0.in_features == 128  # ResNet-18 w16


def test_build_runner_resolves_a_copy(tmp_path):
    cfg = load_config(DEMO)
    cfg.work_dir = str(tmp_path)
    written = copy.deepcopy(cfg)
    runner = build_runner(cfg)
    assert isinstance(runner, SSLRunner)
    assert runner.model.neck.fc0.in_features == 128
    assert type(runner.log_processor).__name__ == 'LogProcessor'
    assert cfg.to_dict() == written.to_dict()  # the caller's, untouched
    # checkpoints keep the config as written (resume compares like this)
    assert runner.cfg.log_processor.type == 'UnresolvedLogProcessor'
    assert runner.cfg.model.neck.in_channels == 'auto'
