# Copyright (c) mmssl contributors. All rights reserved.
"""Training throughput, data-wait share and peak memory in the log line."""

import resource
import statistics
import sys
import time
from typing import List, Optional

import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook

from mmssl.registry import HOOKS


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux: KiB units)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 / 2**20 if sys.platform == 'darwin' else 1 / 2**10
    return peak * scale


def batch_size_of(data_batch) -> int:
    """Images in a batch: the first view's length for multi-crop lists."""
    inputs = data_batch.get('inputs') if isinstance(data_batch, dict) else None
    if isinstance(inputs, (list, tuple)) and inputs:
        inputs = inputs[0]
    return int(len(inputs)) if inputs is not None else 0


@HOOKS.register_module()
class TrainSpeedHook(Hook):
    """Log images/s, data-wait share and peak memory every iteration.

    Adds ``img_per_s`` (images of all ranks per second of this iteration),
    ``data_share`` (time waiting for the batch / iteration time),
    ``rss_mb`` (peak CPU resident memory of this process) and, on CUDA,
    ``cuda_max_alloc_mb`` (``torch.cuda.max_memory_allocated``, which
    mmengine's logger resets at each log line) to the training log line;
    :meth:`summary` reports the maximum over the whole run. The iteration
    time runs from the end of the previous iteration (or the start of the
    epoch) to the end of this one, as mmengine's ``IterTimerHook``
    measures it. Iterations after the first
    ``warmup`` are also kept in :attr:`times`, :attr:`data_times` and
    :attr:`images` for :meth:`summary` (used by
    ``tools/analysis_tools/benchmark_train.py``).

    Args:
        warmup (int): Iterations left out of :meth:`summary`. Defaults to 2.
    """

    priority = 'NORMAL'

    def __init__(self, warmup: int = 2) -> None:
        self.warmup = warmup
        self.times: List[float] = []
        self.data_times: List[float] = []
        self.images: List[int] = []
        self.cuda_peak_mb = 0.0
        self._last: Optional[float] = None
        self._data_time = 0.0

    def before_train_epoch(self, runner) -> None:
        self._last = time.perf_counter()

    def before_train_iter(self, runner, batch_idx, data_batch=None) -> None:
        now = time.perf_counter()
        if self._last is None:
            self._last = now
        self._data_time = now - self._last

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ) -> None:
        now = time.perf_counter()
        elapsed = max(now - self._last, 1e-9)
        self._last = now
        images = batch_size_of(data_batch) * get_world_size()
        hub = runner.message_hub
        hub.update_scalar('train/img_per_s', images / elapsed)
        hub.update_scalar('train/data_share', self._data_time / elapsed)
        hub.update_scalar('train/rss_mb', peak_rss_mb())
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            # mmengine's logger resets the peak statistics each time it
            # reads them: keep the run's own maximum here
            peak = torch.cuda.max_memory_allocated() / 2**20
            self.cuda_peak_mb = max(self.cuda_peak_mb, peak)
            hub.update_scalar('train/cuda_max_alloc_mb', peak)
        if runner.iter >= self.warmup:  # runner.iter: iterations before
            self.times.append(elapsed)
            self.data_times.append(self._data_time)
            self.images.append(images)

    def summary(self) -> dict:
        """Figures over the warm iterations (empty dict when none ran)."""
        if not self.times:
            return {}
        total = sum(self.times)
        out = dict(
            iters=len(self.times),
            img_per_s=sum(self.images) / total,
            s_per_iter=statistics.median(self.times),
            s_per_iter_min=min(self.times),
            s_per_iter_max=max(self.times),
            data_share=sum(self.data_times) / total,
            peak_rss_mb=peak_rss_mb(),
        )
        if self.cuda_peak_mb:
            out['cuda_max_alloc_mb'] = self.cuda_peak_mb
        return out
