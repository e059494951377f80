"""Launch helpers: distributed setup for CPU/GPU, SLURM, MPI, free ports.

Kept free of torch imports at module level; the shell scripts under tools/
call :mod:`mmssl.engine.launch.ports` as a plain file.
"""

from .data_check import (
    TooFewSamplesError,
    check_train_dataloader,
    iterations_per_epoch,
)
from .dist import (
    LAUNCHERS,
    choose_backend,
    cpu_model_wrapper_cfg,
    dist_env,
    init_distributed,
    setup_distributed_cfg,
)
from .ports import find_free_port, is_port_free
from .resume import find_newest_checkpoint, resolve_resume
from .runner import CPUAwareRunner, build_runner
from .slurm import (
    mpi_dist_env,
    parse_slurm_nodelist,
    slurm_dist_env,
    slurm_master_port,
)

__all__ = [
    'LAUNCHERS',
    'TooFewSamplesError',
    'check_train_dataloader',
    'choose_backend',
    'cpu_model_wrapper_cfg',
    'dist_env',
    'find_free_port',
    'init_distributed',
    'is_port_free',
    'iterations_per_epoch',
    'mpi_dist_env',
    'parse_slurm_nodelist',
    'slurm_dist_env',
    'slurm_master_port',
    'setup_distributed_cfg',
    'find_newest_checkpoint',
    'resolve_resume',
    'CPUAwareRunner',
    'build_runner',
]
