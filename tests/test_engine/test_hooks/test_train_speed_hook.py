"""TrainSpeedHook: images/s, data-wait share and memory from known times."""

import torch
from mmengine.logging import MessageHub

from mmssl.engine.hooks import TrainSpeedHook
from mmssl.engine.hooks import train_speed_hook as mod


class FakeRunner:
    def __init__(self):
        self.iter = 0
        self.message_hub = MessageHub.get_instance('test_train_speed_hook')


def test_figures_from_known_times(monkeypatch):
    clock = iter([10.0, 10.5, 12.5, 13.0, 14.0, 15.0, 15.25, 16.0])
    monkeypatch.setattr(mod.time, 'perf_counter', lambda: next(clock))
    hook, runner = TrainSpeedHook(warmup=1), FakeRunner()
    batch = dict(inputs=[torch.zeros(4, 3, 8, 8), torch.zeros(4, 3, 4, 4)])
    hook.before_train_epoch(runner)  # t = 10
    # iteration 0: data ready at 10.5, done at 12.5 (warm-up, not kept)
    # iteration 1: data at 13.0 (0.5 s wait), done at 14.0 (1.5 s)
    # iteration 2: data at 15.0 (1.0 s wait), done at 15.25 (1.25 s)
    for _ in range(3):
        hook.before_train_iter(runner, runner.iter, batch)
        hook.after_train_iter(runner, runner.iter, batch)
        runner.iter += 1
    hub = runner.message_hub
    assert hub.get_scalar('train/img_per_s').current() == 4 / 1.25
    assert hub.get_scalar('train/data_share').current() == 1.0 / 1.25
    assert hub.get_scalar('train/rss_mb').current() > 10
    s = hook.summary()
    assert s['iters'] == 2
    assert s['img_per_s'] == 8 / 2.75
    assert s['s_per_iter'] == (1.5 + 1.25) / 2
    assert s['data_share'] == 1.5 / 2.75
    assert (s['s_per_iter_min'], s['s_per_iter_max']) == (1.25, 1.5)


def test_no_warm_iterations_gives_an_empty_summary():
    assert TrainSpeedHook(warmup=5).summary() == {}


def test_cuda_peak_survives_the_loggers_reset(monkeypatch):
    """mmengine's logger resets the CUDA peak statistics whenever it reads
    them: the summary must give the run's maximum, not the last reading
    (on an H200 it printed 549 MiB for a run that peaked at 22 GiB)."""
    readings = iter([300 * 2**20, 22000 * 2**20, 549 * 2**20])
    monkeypatch.setattr(mod.torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(mod.torch.cuda, 'is_initialized', lambda: True)
    monkeypatch.setattr(
        mod.torch.cuda, 'max_memory_allocated', lambda: next(readings)
    )
    hook, runner = TrainSpeedHook(warmup=0), FakeRunner()
    batch = dict(inputs=torch.zeros(2, 3, 4, 4))
    hook.before_train_epoch(runner)
    logged = []
    for _ in range(3):
        hook.before_train_iter(runner, runner.iter, batch)
        hook.after_train_iter(runner, runner.iter, batch)
        hub = runner.message_hub
        logged.append(hub.get_scalar('train/cuda_max_alloc_mb').current())
        runner.iter += 1
    assert logged == [300, 22000, 549]  # each line: since the last reset
    assert hook.summary()['cuda_max_alloc_mb'] == 22000
