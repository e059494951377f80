from .feature_loops import FeatureTestLoop, FeatureValLoop
from .functional import topk_accuracy, weighted_knn_scores
from .hooks import FeatureEvalHook, RankMeHook
from .metrics import KNNAccuracy, LinearProbeAccuracy, fit_linear_probe

__all__ = [
    'FeatureEvalHook',
    'FeatureTestLoop',
    'FeatureValLoop',
    'RankMeHook',
    'topk_accuracy',
    'weighted_knn_scores',
    'KNNAccuracy',
    'LinearProbeAccuracy',
    'fit_linear_probe',
]
