from .feature_extraction import batch_features, extract_features, pool_features
from .functional import topk_accuracy, weighted_knn_scores
from .metrics import KNNAccuracy, LinearProbeAccuracy, fit_linear_probe

__all__ = [
    'batch_features',
    'extract_features',
    'pool_features',
    'topk_accuracy',
    'weighted_knn_scores',
    'KNNAccuracy',
    'LinearProbeAccuracy',
    'fit_linear_probe',
]
