from .data_check import (
    TooFewSamplesError,
    check_memory_size,
    check_train_dataloader,
    iterations_per_epoch,
)
from .distributed import (
    cpu_model_wrapper_cfg,
    init_distributed,
    setup_distributed_cfg,
)
from .feature_loops import FeatureTestLoop, FeatureValLoop
from .loops import ResumableEpochBasedTrainLoop, ResumableIterBasedTrainLoop
from .runner import SSLRunner, build_runner

__all__ = [
    'FeatureTestLoop',
    'FeatureValLoop',
    'ResumableEpochBasedTrainLoop',
    'ResumableIterBasedTrainLoop',
    'SSLRunner',
    'TooFewSamplesError',
    'build_runner',
    'check_memory_size',
    'check_train_dataloader',
    'cpu_model_wrapper_cfg',
    'init_distributed',
    'iterations_per_epoch',
    'setup_distributed_cfg',
]
