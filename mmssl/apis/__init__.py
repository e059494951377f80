"""What Python users call: train like tools/train.py, build a model,
count its parameters, publish a checkpoint.

Also the location of mmssl's ``INFERENCERS`` registry (none registered
yet).
"""

from .model import init_model
from .param_count import count_params, parameter_table
from .publish import publish_checkpoint, sha256_of
from .train import (
    prepare_train_cfg,
    scale_lr,
    train,
)

__all__ = [
    'count_params',
    'init_model',
    'parameter_table',
    'prepare_train_cfg',
    'publish_checkpoint',
    'scale_lr',
    'sha256_of',
    'train',
]
