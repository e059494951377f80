"""Launcher helpers that import without torch (standard library only).

Distributed environment variables (torchrun, SLURM, MPI), free ports,
the newest checkpoint of a work dir, stop requests from signals and the
one-run-per-work-dir lock. The shell scripts under tools/ run
``python -m mmssl.launch.ports``; nothing here imports torch, mmengine or
another part of mmssl.
"""

from .env import LAUNCHERS, choose_backend, dist_env
from .lock import LOCK_NAME, RunLock, WorkDirBusyError
from .resume import (
    IncompleteCheckpointWarning,
    checkpoint_candidates,
    checkpoint_problem,
    find_newest_checkpoint,
    resolve_resume,
)
from .signals import (
    DEFAULT_SIGNALS,
    AbortedBySignal,
    StopSignals,
    parse_signals,
)
from .slurm import (
    mpi_dist_env,
    parse_slurm_nodelist,
    slurm_dist_env,
    slurm_master_port,
)

__all__ = [
    'AbortedBySignal',
    'IncompleteCheckpointWarning',
    'checkpoint_candidates',
    'checkpoint_problem',
    'DEFAULT_SIGNALS',
    'LAUNCHERS',
    'LOCK_NAME',
    'RunLock',
    'StopSignals',
    'WorkDirBusyError',
    'choose_backend',
    'dist_env',
    'find_free_port',
    'find_newest_checkpoint',
    'is_port_free',
    'mpi_dist_env',
    'parse_signals',
    'parse_slurm_nodelist',
    'resolve_resume',
    'slurm_dist_env',
    'slurm_master_port',
]


def __getattr__(name: str):
    """``find_free_port`` and ``is_port_free``, imported when first used.

    The package does not import :mod:`.ports` itself, so that
    ``python -m mmssl.launch.ports`` (the shell scripts) runs it without
    runpy's "found in sys.modules" RuntimeWarning.
    """
    if name in ('find_free_port', 'is_port_free'):
        from . import ports

        return getattr(ports, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
