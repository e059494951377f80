from .knn_accuracy import KNNAccuracy

__all__ = ['KNNAccuracy']
