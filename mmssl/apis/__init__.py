"""What Python users call: train like tools/train.py, build a model,
count its parameters, publish a checkpoint.

Also the location of mmssl's ``INFERENCERS`` registry (none registered
yet).
"""

from .dry_run import dry_run
from .model import init_model
from .param_count import count_params, parameter_table
from .publish import publish_checkpoint, sha256_of
from .train import (
    TrainConfigError,
    build_train_runner,
    prepare_train_cfg,
    scale_lr,
    train,
)

__all__ = [
    'TrainConfigError',
    'build_train_runner',
    'count_params',
    'dry_run',
    'init_model',
    'parameter_table',
    'prepare_train_cfg',
    'publish_checkpoint',
    'scale_lr',
    'sha256_of',
    'train',
]
