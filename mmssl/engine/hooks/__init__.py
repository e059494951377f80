from .atomic_checkpoint_hook import (
    AtomicCheckpointHook,
    get_rng_state,
    set_rng_state,
)

__all__ = ['AtomicCheckpointHook', 'get_rng_state', 'set_rng_state']
