"""SSLRunner: registered, same hooks from Python and tools, atomic saves
with the loop state, every load under mmssl's policy."""

import argparse
import itertools
import os
import os.path as osp

import pytest
import torch
from mmengine.fileio import LocalBackend
from mmengine.logging import HistoryBuffer
from mmengine.model import BaseModel
from mmengine.runner import IterBasedTrainLoop
from torch import nn

from mmssl.checkpoint import UnsafeCheckpointError, load_checkpoint
from mmssl.config import load_config
from mmssl.engine.runner import SSLRunner, build_runner
from mmssl.registry import RUNNERS

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
_names = itertools.count()


class _Toy(BaseModel):
    def __init__(self, init_cfg=None) -> None:
        super().__init__(init_cfg=init_cfg)
        self.fc = nn.Linear(2, 1)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        out = self.fc(torch.stack(inputs))
        return dict(loss=out.pow(2).mean()) if mode == 'loss' else out


class _CountingLoop(IterBasedTrainLoop):
    """A loop with a state_dict, as the resumable loops have."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen = 0
        self.loaded = None

    def run_iter(self, data_batch) -> None:
        self.seen += 1
        super().run_iter(data_batch)

    def state_dict(self) -> dict:
        return dict(seen=self.seen, tag='counting')

    def load_state_dict(self, state: dict) -> None:
        self.loaded = dict(state)
        self.seen = state['seen']


def _toy_runner(work_dir, max_iters=4, interval=2, **kwargs) -> SSLRunner:
    data = [dict(inputs=torch.tensor([float(i), 1.0])) for i in range(8)]
    return SSLRunner(
        model=kwargs.pop('model', _Toy()),
        work_dir=str(work_dir),
        experiment_name=f'ssl_runner_{os.getpid()}_{next(_names)}',
        train_dataloader=dict(
            dataset=data,
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=2,
            num_workers=0,
        ),
        train_cfg=dict(type=_CountingLoop, max_iters=max_iters),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        default_hooks=dict(
            checkpoint=dict(
                type='CheckpointHook', interval=interval, by_epoch=False
            ),
            logger=dict(type='LoggerHook', interval=100),
        ),
        default_scope='mmssl',
        **kwargs,
    )


def _hook_names(runner) -> list:
    return [type(h).__name__ for h in runner.hooks]


def test_runner_type_builds_ssl_runner_with_the_same_hooks(tmp_path):
    cfg = load_config(
        osp.join(ROOT, 'tests', 'data', 'configs', 'simclr_tiny.py')
    )
    assert cfg.runner_type == 'SSLRunner'  # from default_runtime.py
    runners = []
    for build in (RUNNERS.build, build_runner, SSLRunner.from_cfg):
        cfg.work_dir = str(tmp_path / str(len(runners)))
        cfg.experiment_name = f'ssl_runner_type_{next(_names)}'
        runners.append(build(cfg.copy()))
    assert all(type(r) is SSLRunner for r in runners)
    names = _hook_names(runners[0])
    assert 'DistLossAverageHook' in names and 'PreemptionHook' in names
    assert all(_hook_names(r) == names for r in runners)


def test_saves_hold_the_loop_state_and_resume_restores_it(tmp_path):
    runner = _toy_runner(tmp_path)
    runner.train()
    for it in (2, 4):
        ckpt = load_checkpoint(str(tmp_path / f'iter_{it}.pth'))
        assert ckpt['loop_state'] == dict(seen=it, tag='counting')
    resumed = _toy_runner(
        tmp_path,
        max_iters=6,
        resume=True,
        load_from=str(tmp_path / 'iter_2.pth'),
    )
    resumed.train()
    assert resumed.train_loop.loaded == dict(seen=2, tag='counting')
    assert resumed.iter == 6 and resumed.train_loop.seen == 6


def test_save_killed_midway_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    runner = _toy_runner(tmp_path, max_iters=2)
    runner.train()
    path = tmp_path / 'iter_2.pth'
    before = path.read_bytes()

    def half_then_die(self, obj, filepath):
        with open(filepath, 'wb') as f:
            f.write(bytes(obj)[:100])
        raise KeyboardInterrupt('killed mid-save')

    monkeypatch.setattr(LocalBackend, 'put', half_then_die)
    with pytest.raises(KeyboardInterrupt):
        runner.save_checkpoint(str(tmp_path), 'iter_2.pth', by_epoch=False)
    assert path.read_bytes() == before
    assert not [f for f in os.listdir(tmp_path) if f.endswith('.tmp')]


def _mmengine_like(path, evil=False) -> str:
    buf = HistoryBuffer()
    buf.update(1.0)
    ckpt = dict(
        state_dict=dict(_Toy().state_dict()),
        message_hub=dict(log_scalars={'loss': buf}),
    )
    if evil:
        ckpt['args'] = argparse.Namespace(lr=1)
    torch.save(ckpt, path)
    return str(path)


def test_loads_and_pretrained_init_follow_the_policy(tmp_path, monkeypatch):
    monkeypatch.delenv('MMSSL_TRUST_CHECKPOINT', raising=False)
    good = _mmengine_like(tmp_path / 'good.pth')
    evil = _mmengine_like(tmp_path / 'evil.pth', evil=True)
    runner = _toy_runner(tmp_path / 'a')
    runner.load_checkpoint(good)  # mmengine types: allowlisted
    with pytest.raises(UnsafeCheckpointError, match='argparse.Namespace'):
        runner.load_checkpoint(evil)
    # init_cfg Pretrained goes through mmengine's loader, inside the scope
    model = _Toy(init_cfg=dict(type='Pretrained', checkpoint=good))
    _toy_runner(tmp_path / 'b', model=model)._init_model_weights()
    model = _Toy(init_cfg=dict(type='Pretrained', checkpoint=evil))
    with pytest.raises(UnsafeCheckpointError):
        _toy_runner(tmp_path / 'c', model=model)._init_model_weights()
    # the config's explicit opt-in
    trusting = _toy_runner(tmp_path / 'd', cfg=dict(trust_checkpoint=True))
    assert trusting.load_checkpoint(evil)['args'].lr == 1
