"""The one place that reads and writes checkpoints (docs/en/checkpoints.md).

* :mod:`.policy`: which types a checkpoint may unpickle, trust opt-ins,
  the :func:`loading_policy` scope.
* :mod:`.io`: the safe loader and atomic saves.
"""

from .io import (
    atomic_write_bytes,
    atomic_write_text,
    load_checkpoint,
    save_checkpoint_atomic,
    torch_load_safe,
)
from .policy import (
    TRUST_ENV,
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    checkpoint_trusted,
    loading_policy,
    safe_checkpoint_globals,
    set_checkpoint_trust,
    trusted_checkpoints,
)

__all__ = [
    'TRUST_ENV',
    'UnsafeCheckpointError',
    'add_safe_checkpoint_globals',
    'atomic_write_bytes',
    'atomic_write_text',
    'checkpoint_trusted',
    'load_checkpoint',
    'loading_policy',
    'safe_checkpoint_globals',
    'save_checkpoint_atomic',
    'set_checkpoint_trust',
    'torch_load_safe',
    'trusted_checkpoints',
]
