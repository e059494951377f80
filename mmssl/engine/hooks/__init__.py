from .atomic_checkpoint_hook import (
    AtomicCheckpointHook,
    get_rng_state,
    set_rng_state,
)
from .bad_file_hook import BadFileCounter, BadFileSummaryHook, collect_skipped
from .dist_loss_average_hook import DistLossAverageHook
from .knn_eval_hook import KNNEvalHook
from .pretrained_init_hook import PretrainedInitHook

__all__ = [
    'AtomicCheckpointHook', 'get_rng_state', 'set_rng_state',
    'BadFileSummaryHook', 'BadFileCounter', 'collect_skipped',
    'DistLossAverageHook', 'KNNEvalHook', 'PretrainedInitHook'
]
