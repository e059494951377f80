from .setup_env import register_all_modules

__all__ = ['register_all_modules']

# tools of the trade (branch `tools`)
from .model_loading import (  # noqa: E402
    init_model,
    load_checkpoint_file,
    load_config,
    strip_prefix,
)
from .model_parts import backbone_prefix, find_backbone  # noqa: E402
from .param_count import count_params, parameter_table  # noqa: E402
from .publish import publish_checkpoint, sha256_of  # noqa: E402

__all__ += [
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
