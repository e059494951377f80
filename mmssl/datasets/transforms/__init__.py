from .blockwise_mask import BlockwiseMaskGenerator, blockwise_mask
from .loading import BadImageError, LoadImageRobust, scale_to_uint8
from .multi_crop import MultiCrop
from .relative_loc import RelativeLocPatches
from .volume import LoadVolume, MONAITransform
from .volume_multi_crop import (
    BlockwiseMaskGenerator3D,
    MultiCrop3D,
    blockwise_mask_3d,
)

__all__ = [
    'MultiCrop',
    'BlockwiseMaskGenerator',
    'blockwise_mask',
    'LoadImageRobust',
    'BadImageError',
    'scale_to_uint8',
    'RelativeLocPatches',
    'LoadVolume',
    'MONAITransform',
    'MultiCrop3D',
    'BlockwiseMaskGenerator3D',
    'blockwise_mask_3d',
]
