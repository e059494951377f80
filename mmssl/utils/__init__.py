from .checkpoint_io import (
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    atomic_write_text,
    checkpoint_trusted,
    install_checkpoint_io,
    load_checkpoint_safe,
    safe_checkpoint_globals,
    save_checkpoint_atomic,
    set_checkpoint_trust,
    torch_load_safe,
    trusted_checkpoints,
)
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

# Every mmengine checkpoint load / save of this process follows mmssl's
# safety policy from here on (see docs/en/checkpoints.md).
install_checkpoint_io()

__all__ = [
    'register_all_modules',
    'UnsafeCheckpointError',
    'add_safe_checkpoint_globals',
    'atomic_write_text',
    'checkpoint_trusted',
    'install_checkpoint_io',
    'load_checkpoint_safe',
    'safe_checkpoint_globals',
    'save_checkpoint_atomic',
    'set_checkpoint_trust',
    'torch_load_safe',
    'trusted_checkpoints',
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
