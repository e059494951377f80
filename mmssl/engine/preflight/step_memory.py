"""The peak memory of one training step, measured on small batches.

``tools/train.py --dry-run`` runs a few training steps of the real model,
pipeline and optimizer on batches of 2 and 4 samples, measures the peak
of each (CPU: the process's peak resident memory, reset before each step
through ``/proc/self/clear_refs``; CUDA: ``torch.cuda.max_memory_allocated``)
and extends the line through the two points to the configured batch size
(activations grow linearly with the batch; weights, gradients and
optimizer state do not). Dataloader workers are separate processes: their
proportional memory (PSS) is measured on one real batch and added.
"""

from typing import Any, Dict, List, Optional

GIB = 2**30


def _proc_kib(path: str, key: str) -> Optional[int]:
    """The ``key:`` value (kB) of a /proc status-style file, or None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ':'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def mem_available() -> Optional[int]:
    """``MemAvailable`` of /proc/meminfo in bytes (None off Linux)."""
    kib = _proc_kib('/proc/meminfo', 'MemAvailable')
    return None if kib is None else kib * 1024


def rss() -> Optional[int]:
    """Resident memory of this process in bytes (None off Linux)."""
    kib = _proc_kib('/proc/self/status', 'VmRSS')
    return None if kib is None else kib * 1024


def _reset_peak_rss() -> bool:
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')  # resets VmHWM to the current VmRSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def _peak_rss() -> Optional[int]:
    kib = _proc_kib('/proc/self/status', 'VmHWM')
    return None if kib is None else kib * 1024


def workers_pss(dataloader: Any) -> int:
    """Proportional memory of the dataloader's workers after one batch."""
    if not getattr(dataloader, 'num_workers', 0):
        return 0
    iterator = iter(dataloader)
    try:
        next(iterator)
        pids = [w.pid for w in getattr(iterator, '_workers', [])]
        total = 0
        for pid in pids:
            kib = _proc_kib(f'/proc/{pid}/smaps_rollup', 'Pss')
            total += (kib or 0) * 1024
        return total
    finally:
        shutdown = getattr(iterator, '_shutdown_workers', None)
        if shutdown is not None and not dataloader.persistent_workers:
            shutdown()


def _step_peak(runner: Any, batch: Any, cuda: bool) -> Optional[int]:
    import torch

    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    elif not _reset_peak_rss():
        return None
    runner.model.train_step(batch, optim_wrapper=runner.optim_wrapper)
    if cuda:
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()
    return _peak_rss()


def measure_step_memory(runner: Any, sizes=(2, 4)) -> Dict[str, Any]:
    """Peak memory of one training step at the configured batch size.

    The optim wrapper must be built (``tools/train.py --dry-run`` does it).
    The steps change the weights of this runner's model: measure in a
    dry run, not before training.

    Args:
        runner (Runner): A runner with its train loop and optim wrapper.
        sizes (tuple[int, int]): The two batch sizes measured.

    Returns:
        dict: ``device`` ('cpu'/'cuda'), ``batch``, ``peak`` (bytes, at
        ``batch``, workers included), ``points`` ({size: bytes}),
        ``workers`` (bytes), ``available`` (bytes or None) and
        ``extrapolated`` (bool).
    """
    import torch

    dataloader = runner.train_dataloader
    dataset = dataloader.dataset
    batch = dataloader.batch_size
    cuda = next(runner.model.parameters()).is_cuda
    sizes = tuple(s for s in sizes if s < batch) or (batch,)
    sizes = sizes if len(sizes) == 2 else (batch,)
    runner.model.train()
    points = {}
    for k in (sizes[0], *sizes):  # the first step allocates the state
        samples = [dataset[i % len(dataset)] for i in range(k)]
        points[k] = _step_peak(runner, dataloader.collate_fn(samples), cuda)
    workers = 0 if cuda else workers_pss(dataloader)
    if None in points.values():
        return dict(device='cuda' if cuda else 'cpu', batch=batch, peak=None)
    if len(sizes) == 2:
        (a, pa), (b, pb) = ((s, points[s]) for s in sizes)
        peak = pb + (batch - b) * max(pb - pa, 0) / (b - a)
    else:
        peak = points[batch]
    if cuda:
        free, _ = torch.cuda.mem_get_info()
        available = free + torch.cuda.memory_reserved()
    else:
        free = mem_available()
        available = None if free is None else free + (rss() or 0) + workers
    return dict(
        device='cuda' if cuda else 'cpu',
        batch=batch,
        peak=int(peak + workers),
        points=points,
        workers=workers,
        available=available,
        extrapolated=len(sizes) == 2,
    )


def step_memory_lines(result: Dict[str, Any]) -> List[str]:
    """Console lines for :func:`measure_step_memory`'s result."""
    device, batch, peak = result['device'], result['batch'], result['peak']
    what = 'GPU memory' if device == 'cuda' else 'memory'
    if peak is None:
        return [f'peak {what} of a training step: not measurable here']
    how = ', '.join(
        f'{v / GIB:.2f} GiB at batch {k}'
        for k, v in sorted(result['points'].items())
    )
    how = f'measured {how}' + (
        f', extended to batch {batch}' if result['extrapolated'] else ''
    )
    if result.get('workers'):
        how += f'; dataloader workers {result["workers"] / GIB:.2f} GiB'
    lines = [
        f'peak {what} of one training step at batch {batch}: about '
        f'{peak / GIB:.2f} GiB ({how})'
    ]
    available = result.get('available')
    if available is not None and peak > available:
        lines.append(
            f'warning: that is more than the {available / GIB:.2f} GiB of '
            f'{what} available here; the run would likely be killed or '
            'run out of memory. Shrink it with a smaller batch '
            f'(train_dataloader.batch_size, now {batch}) or a smaller '
            'model or crops (model.backbone.arch, fewer or smaller '
            'MultiCrop crops: num_local_crops, global_size, local_size).'
        )
    return lines
