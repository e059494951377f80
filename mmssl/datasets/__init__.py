from .block_mask_collate import batch_masks, block_mask_collate
from .cluster_uniform_sampler import ClusterUniformSampler
from .image_folder import ImageFolderDataset
from .image_index import IMG_EXTENSIONS, scan_images
from .knn_dataset import KNNDataset
from .label_subset import LabelSubset, select_label_subset
from .mixed import MixedDataset, WeightedMixSampler, epoch_indices
from .mixed_resolution import (
    MixedResolutionBatchSampler,
    MixedResolutionDataset,
    SizedIndex,
)
from .path_table import PathTable
from .transforms import *  # noqa: F401,F403
from .volume_folder import VOLUME_EXTENSIONS, VolumeFolderDataset
from .worker_seed import seed_worker

__all__ = [
    'batch_masks',
    'block_mask_collate',
    'KNNDataset',
    'LabelSubset',
    'select_label_subset',
    'ImageFolderDataset',
    'PathTable',
    'scan_images',
    'IMG_EXTENSIONS',
    'MixedDataset',
    'WeightedMixSampler',
    'epoch_indices',
    'seed_worker',
    'ClusterUniformSampler',
    'MixedResolutionBatchSampler',
    'MixedResolutionDataset',
    'SizedIndex',
    'VolumeFolderDataset',
    'VOLUME_EXTENSIONS',
]
