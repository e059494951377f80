"""Torch CPU threads sized to the cores, the processes and the workers."""

import logging

import pytest
import torch

from mmssl.engine.runner import build_runner
from mmssl.engine.runner.workers import (
    available_cpus,
    busy_cores,
    fit_threads_to_machine,
    local_world_size,
    threads_for,
)
from tests.support.resume import tiny_cfg

SIMCLR = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'


@pytest.fixture(autouse=True)
def _keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    'cpus, procs, workers, expected',
    [
        (2, 1, 2, 1),  # the 2-core demo: 2 workers leave 1 core
        (2, 1, 0, 2),
        (16, 8, 0, 2),  # 8 ranks share 16 cores
        (16, 4, 1, 3),
        (1, 4, 3, 1),  # never below one
        (64, 1, 8, 56),
    ],
)
def test_threads_for(cpus, procs, workers, expected):
    assert threads_for(cpus, procs, workers) == expected
    assert threads_for(cpus, procs, workers, busy=cpus) == 1


def test_local_world_size_from_the_launcher():
    assert local_world_size({}) == 1
    assert local_world_size({'LOCAL_WORLD_SIZE': '4'}) == 4
    assert local_world_size({'SLURM_NTASKS_PER_NODE': '8'}) == 8
    assert local_world_size({'LOCAL_WORLD_SIZE': 'x'}) == 1


def test_fit_threads_default_sets_the_share():
    line = fit_threads_to_machine(
        workers=2,
        cuda=False,
        environ={'LOCAL_WORLD_SIZE': '2'},
        cpus=8,
        load=0.0,
    )
    assert torch.get_num_threads() == 2  # 8 cores / 2 ranks - 2 workers
    assert line.startswith(
        'torch threads: 2 (8 core(s), 0 kept busy by other jobs, 2 process(es)'
    )
    assert '\n' not in line


def test_other_jobs_load_takes_cores_away(monkeypatch):
    """The issue's shared 2-core machine at load 4-7: one thread."""
    monkeypatch.setattr('os.cpu_count', lambda: 2)
    assert busy_cores(2, load=5.3) == 5
    assert busy_cores(2, load=0.7) == 0
    line = fit_threads_to_machine(cuda=False, environ={}, cpus=2, load=5.3)
    assert torch.get_num_threads() == 1 and '1 kept busy' in line
    fit_threads_to_machine(cuda=False, environ={}, cpus=2, load=0.2)
    assert torch.get_num_threads() == 2
    monkeypatch.setattr('os.cpu_count', lambda: 64)  # 4 of 64 cores ours
    assert busy_cores(4, load=32.0) == 2


def test_fit_threads_respects_omp_num_threads_and_the_flag():
    torch.set_num_threads(1)
    line = fit_threads_to_machine(
        workers=0, cuda=False, environ={'OMP_NUM_THREADS': '1'}, cpus=8
    )
    assert torch.get_num_threads() == 1  # not raised to 8
    assert line == 'torch threads: 1 (OMP_NUM_THREADS=1)'
    line = fit_threads_to_machine(
        threads=3, cuda=False, environ={'OMP_NUM_THREADS': '1'}
    )
    assert torch.get_num_threads() == 3 and '--threads' in line
    assert fit_threads_to_machine(cuda=True, environ={}) is None
    with pytest.raises(ValueError, match='got 0'):
        fit_threads_to_machine(threads=0)


def test_runner_sets_threads_and_logs_one_line(
    demo_data_root, tmp_path, monkeypatch
):
    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    monkeypatch.delenv('LOCAL_WORLD_SIZE', raising=False)
    monkeypatch.setattr('os.getloadavg', lambda: (0.0, 0.0, 0.0))
    cfg = tiny_cfg(SIMCLR, demo_data_root, str(tmp_path))
    cfg.train_dataloader.update(num_workers=1, persistent_workers=False)
    expected = threads_for(available_cpus(), 1, min(1, available_cpus()))
    torch.set_num_threads(7)
    runner = build_runner(cfg)
    assert torch.get_num_threads() == expected
    (log_file,) = [
        h.baseFilename
        for h in runner.logger.handlers
        if isinstance(h, logging.FileHandler)
    ]
    log = open(log_file).read()
    lines = [x for x in log.splitlines() if 'torch threads:' in x]
    assert len(lines) == 1 and f'torch threads: {expected} (' in lines[0]
    cfg.env_cfg = dict(cfg.get('env_cfg') or {}, threads=2)
    build_runner(cfg)
    assert torch.get_num_threads() == 2


def test_eval_loaders_cap_workers_at_the_cores():
    """RankMeHook's loader took a training config's 8 workers on 2 cores
    (and torch warned about it)."""
    from mmssl.evaluation.hooks.feature_eval_hook import build_eval_loader

    loader = build_eval_loader(
        dict(batch_size=2, num_workers=available_cpus() + 6,
             dataset=list(range(4)))
    )  # fmt: skip
    assert loader.num_workers == available_cpus()
