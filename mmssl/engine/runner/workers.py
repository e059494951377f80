"""Dataloader settings sized to the machine: workers and pinned memory."""

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
