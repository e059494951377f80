from .model_loading import init_model, load_config
from .model_parts import find_backbone
from .param_count import count_params, parameter_table
from .publish import publish_checkpoint, sha256_of
from .setup_env import register_all_modules

__all__ = [
    'register_all_modules',
    'init_model',
    'load_config',
    'find_backbone',
    'count_params',
    'parameter_table',
    'publish_checkpoint',
    'sha256_of',
]
