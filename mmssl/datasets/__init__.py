from .image_folder import (
    IMG_EXTENSIONS,
    ImageFolderDataset,
    PathTable,
    scan_images,
)
from .knn_dataset import KNNDataset
from .mixed import MixedDataset, WeightedMixSampler, epoch_indices
from .transforms import *  # noqa: F401,F403

__all__ = [
    'KNNDataset',
    'ImageFolderDataset',
    'PathTable',
    'scan_images',
    'IMG_EXTENSIONS',
    'MixedDataset',
    'WeightedMixSampler',
    'epoch_indices',
]
