from .knn_eval_hook import KNNEvalHook

__all__ = ['KNNEvalHook']
