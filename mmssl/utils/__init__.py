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
from .pretrained import LoadReport, PretrainedStrip, load_pretrained
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
]
