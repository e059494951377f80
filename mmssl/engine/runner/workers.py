"""Dataloader workers: settings sized to the machine, stopped on time."""

import os
from typing import Any, Optional, Tuple


def available_cpus() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. under
    SLURM or ``taskset``), else ``os.cpu_count()``."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


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
