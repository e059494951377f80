from .distributed import (
    cpu_model_wrapper_cfg,
    init_distributed,
    setup_distributed_cfg,
)
from .loops import ResumableEpochBasedTrainLoop, ResumableIterBasedTrainLoop
from .runner import SSLRunner, build_runner

__all__ = [
    'ResumableEpochBasedTrainLoop',
    'ResumableIterBasedTrainLoop',
    'SSLRunner',
    'build_runner',
    'cpu_model_wrapper_cfg',
    'init_distributed',
    'setup_distributed_cfg',
]
