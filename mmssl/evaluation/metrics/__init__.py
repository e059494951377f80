from .knn_accuracy import KNNAccuracy
from .linear_probe_accuracy import LinearProbeAccuracy, fit_linear_probe

__all__ = ['KNNAccuracy', 'LinearProbeAccuracy', 'fit_linear_probe']
