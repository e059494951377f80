from .knn_accuracy import KNNAccuracy
from .linear_probe_accuracy import LinearProbeAccuracy, fit_linear_probe
from .rank_metric import RankMe

__all__ = ['KNNAccuracy', 'LinearProbeAccuracy', 'RankMe', 'fit_linear_probe']
