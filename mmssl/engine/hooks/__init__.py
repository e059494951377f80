from .knn_eval_hook import KNNEvalHook
from .pretrained_init_hook import PretrainedInitHook

__all__ = ['KNNEvalHook', 'PretrainedInitHook']
