"""Which backend and which rendezvous variables a launcher needs.

Standard library only: the shell launchers and the SLURM requeue helper
import this without torch.
"""

import warnings
from typing import Mapping, MutableMapping, Optional

from .slurm import mpi_dist_env, slurm_dist_env

LAUNCHERS = ('none', 'pytorch', 'slurm', 'mpi')
_TORCHRUN_VARS = (
    'RANK',
    'WORLD_SIZE',
    'LOCAL_RANK',
    'MASTER_ADDR',
    'MASTER_PORT',
)


def choose_backend(requested: Optional[str], cuda_available: bool) -> str:
    """The process-group backend to use.

    ``nccl`` needs CUDA: without it ``gloo`` is used (with a warning).
    ``None`` means "the natural one": ``nccl`` with CUDA, else ``gloo``.

    Args:
        requested (str, optional): Backend from the config
            (``env_cfg.dist_cfg.backend``).
        cuda_available (bool): Whether CUDA devices can be used.

    Returns:
        str: ``'nccl'``, ``'gloo'`` or ``'mpi'``.
    """
    if requested is None:
        return 'nccl' if cuda_available else 'gloo'
    requested = requested.lower()
    if requested == 'nccl' and not cuda_available:
        warnings.warn(
            'The config asks for the nccl backend but CUDA is '
            'not available; using gloo (CPU) instead.'
        )
        return 'gloo'
    return requested


def dist_env(
    launcher: str, environ: Mapping[str, str]
) -> MutableMapping[str, str]:
    """The torch.distributed variables for ``launcher``.

    Args:
        launcher (str): One of ``'pytorch'``, ``'slurm'``, ``'mpi'``.
        environ (Mapping[str, str]): The environment.

    Returns:
        dict: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
        ``MASTER_PORT``.

    Raises:
        RuntimeError: If the launcher's variables are missing.
        ValueError: On an unknown launcher.
    """
    if launcher == 'pytorch':
        missing = [k for k in _TORCHRUN_VARS if k not in environ]
        if missing:
            raise RuntimeError(
                f'--launcher pytorch needs the variables {missing} that '
                'torchrun sets; start with `bash tools/dist_train.sh CONFIG '
                'GPUS` or `python -m torch.distributed.run '
                '--nproc_per_node=N tools/train.py CONFIG --launcher '
                'pytorch`, or drop --launcher for one process.'
            )
        return {k: environ[k] for k in _TORCHRUN_VARS}
    if launcher == 'slurm':
        return slurm_dist_env(environ)
    if launcher == 'mpi':
        return mpi_dist_env(environ)
    raise ValueError(
        f'Unknown launcher {launcher!r}; choose one of {LAUNCHERS}.'
    )
