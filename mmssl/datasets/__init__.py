from .cluster_uniform_sampler import ClusterUniformSampler
from .knn_dataset import KNNDataset
from .transforms import *  # noqa: F401,F403

__all__ = ['KNNDataset', 'ClusterUniformSampler']
