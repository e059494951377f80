from .atomic_checkpoint_hook import (
    AtomicCheckpointHook,
    get_rng_state,
    set_rng_state,
)
from .bad_file_hook import BadFileCounter, BadFileSummaryHook, collect_skipped

__all__ = [
    'AtomicCheckpointHook', 'get_rng_state', 'set_rng_state',
    'BadFileSummaryHook', 'BadFileCounter', 'collect_skipped'
]
