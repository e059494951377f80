"""Dataloader workers and torch threads sized to the machine; workers
stopped on time."""

import os
from typing import Any, Mapping, Optional, Tuple

#: Variables that give the number of processes of a job on this node.
LOCAL_WORLD_VARIABLES = (
    'LOCAL_WORLD_SIZE',  # torchrun
    'SLURM_NTASKS_PER_NODE',
    'OMPI_COMM_WORLD_LOCAL_SIZE',
    'MPI_LOCALNRANKS',
)


def available_cpus() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. under
    SLURM or ``taskset``), else ``os.cpu_count()``."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def local_world_size(environ: Optional[Mapping[str, str]] = None) -> int:
    """Processes of this job on this node, as the launcher says (1 when
    none does)."""
    environ = os.environ if environ is None else environ
    for name in LOCAL_WORLD_VARIABLES:
        value = environ.get(name, '')
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def busy_cores(cpus: int, load: Optional[float] = None) -> int:
    """Cores of this process's ``cpus`` that other jobs keep busy: the
    1-minute load average (``load``; default ``os.getloadavg()``), taken
    as spread evenly over the machine's cores, rounded down."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):  # not Unix
            return 0
    machine = max(os.cpu_count() or cpus, cpus)
    return max(0, int(load * cpus / machine))


def threads_for(
    cpus: int, processes: int = 1, workers: int = 0, busy: int = 0
) -> int:
    """Torch threads of one process: its share of the cores other jobs
    leave free, less one core for each of its dataloader workers, at
    least 1.

    torch's default is every core of the machine for every process, so
    several processes (or one process and its workers, or other jobs on a
    shared machine) spin against each other (docs/dev/
    shared_machine_timings.md).

    Args:
        cpus (int): Cores this process may use (its affinity mask).
        processes (int): Processes of the job on this node.
        workers (int): Dataloader workers of this process.
        busy (int): Of those cores, how many other jobs keep busy
            (:func:`busy_cores`).
    """
    free = max(1, cpus - max(0, busy))
    share = max(1, free // max(1, processes))
    return max(1, share - max(0, workers))


def fit_threads_to_machine(
    workers: int = 0,
    threads: Optional[int] = None,
    cuda: Optional[bool] = None,
    environ: Optional[Mapping[str, str]] = None,
    cpus: Optional[int] = None,
    load: Optional[float] = None,
) -> Optional[str]:
    """Set torch's CPU threads for this process; return the one line that
    says so (None on a GPU, where torch's default is left alone).

    ``threads`` (a tool's ``--threads``, ``env_cfg.threads``) wins, then
    ``OMP_NUM_THREADS`` as the user set it (torch already follows it),
    then :func:`threads_for` the cores (:func:`available_cpus`), the
    cores other jobs keep busy (:func:`busy_cores` of the load average
    ``load``), the processes on the node (:func:`local_world_size`) and
    ``workers``.
    """
    import torch

    environ = os.environ if environ is None else environ
    cuda = torch.cuda.is_available() if cuda is None else cuda
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(
                f'threads must be 1 or more, got {threads!r}: e.g. '
                '--threads 1.'
            )
        torch.set_num_threads(int(threads))
        return f'torch threads: {int(threads)} (--threads / env_cfg.threads)'
    omp = environ.get('OMP_NUM_THREADS', '')
    if omp.isdigit():
        n = torch.get_num_threads()
        return f'torch threads: {n} (OMP_NUM_THREADS={omp})'
    if cuda:
        return None
    cpus = available_cpus() if cpus is None else cpus
    busy = min(busy_cores(cpus, load), cpus - 1)
    procs = local_world_size(environ)
    workers = min(workers, cpus)
    n = threads_for(cpus, procs, workers, busy)
    torch.set_num_threads(n)
    return (
        f'torch threads: {n} ({cpus} core(s), {busy} kept busy by other '
        f'jobs, {procs} process(es) on the node, {workers} dataloader '
        'worker(s) each; --threads or OMP_NUM_THREADS to change)'
    )


def configured_workers(runner: Any) -> int:
    """``num_workers`` of the loader the run uses first (train, else
    test, else val), as configured."""
    for name in ('_train_dataloader', '_test_dataloader', '_val_dataloader'):
        loader = getattr(runner, name, None)
        if isinstance(loader, dict):
            return int(loader.get('num_workers', 0) or 0)
        if loader is not None and hasattr(loader, 'num_workers'):
            return int(loader.num_workers)
    return 0


def set_threads_in_cfg(cfg: Any, threads: Optional[int]) -> None:
    """A tool's ``--threads N`` -> ``cfg.env_cfg.threads`` (the runner
    applies it in ``setup_env``)."""
    if threads is None:
        return
    env_cfg = dict(cfg.get('env_cfg') or {})
    env_cfg['threads'] = threads
    cfg.env_cfg = env_cfg


def fit_dataloader_to_machine(
    dataloader: Any, cpus: Optional[int] = None, cuda: Optional[bool] = None
) -> Tuple[Any, Optional[str]]:
    """Cap ``num_workers`` at the cores available; no pinning without CUDA.

    More workers than cores only share the same cores (and each one holds
    a copy of the pipeline state); torch warns about it. ``pin_memory``
    without a GPU pins nothing and torch warns about that too.

    Args:
        dataloader (dict | Any): A dataloader config; anything else is
            returned unchanged.
        cpus (int, optional): Cores; default :func:`available_cpus`.
        cuda (bool, optional): Whether CUDA is there; default: ask torch.

    Returns:
        tuple: The (copied, when changed) config and a note for the log,
        or None when nothing changed.
    """
    if not isinstance(dataloader, dict):
        return dataloader, None
    cpus = available_cpus() if cpus is None else cpus
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    workers = dataloader.get('num_workers', 0) or 0
    changes = {}
    notes = []
    if workers > cpus:
        changes['num_workers'] = cpus
        notes.append(
            f'num_workers {workers} -> {cpus} ({cpus} CPU core(s) '
            'available to this process)'
        )
    if dataloader.get('pin_memory') and not cuda:
        changes['pin_memory'] = False
    if not changes:
        return dataloader, None
    return dict(dataloader, **changes), '; '.join(notes) or None


def stop_persistent_workers(loader: Any) -> bool:
    """Stop the worker processes a ``persistent_workers`` loader keeps.

    Such a loader holds its workers until it is garbage collected, and
    torch stops them from a finalizer. When that finalizer runs in a later
    ``gc.collect()`` (mmengine's datasets call one when they load), the
    queues may be collected first and each worker waits out torch's 5 s
    join timeout: 20 s for a train and a val loader of two workers each,
    paid by whatever runs next in the process (a notebook cell, the next
    test). Stopped here they exit at once; iterating the loader again
    starts new ones.

    Args:
        loader (Any): A ``DataLoader``; anything else is left alone.

    Returns:
        bool: Whether workers were stopped.
    """
    iterator = getattr(loader, '_iterator', None)
    shutdown = getattr(iterator, '_shutdown_workers', None)
    if shutdown is None:
        return False
    shutdown()
    loader._iterator = None
    return True
