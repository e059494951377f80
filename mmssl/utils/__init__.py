from .model_loading import (
    init_model,
    load_checkpoint_file,
    load_config,
    strip_prefix,
)
from .model_parts import backbone_prefix, find_backbone
from .param_count import count_params, parameter_table
from .pretrained import LoadReport, PretrainedStrip, load_pretrained
from .publish import publish_checkpoint, sha256_of
from .setup_env import register_all_modules

__all__ = [
    'register_all_modules',
    'LoadReport',
    'PretrainedStrip',
    'load_pretrained',
    'init_model',
    'load_checkpoint_file',
    'load_config',
    'strip_prefix',
    'backbone_prefix',
    'find_backbone',
    'count_params',
    'parameter_table',
    'publish_checkpoint',
    'sha256_of',
]
