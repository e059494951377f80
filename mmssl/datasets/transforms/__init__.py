from .blockwise_mask import BlockwiseMaskGenerator, blockwise_mask
from .loading import BadImageError, LoadImageRobust, scale_to_uint8
from .multi_crop import MultiCrop

__all__ = [
    'MultiCrop',
    'BlockwiseMaskGenerator',
    'blockwise_mask',
    'LoadImageRobust',
    'BadImageError',
    'scale_to_uint8',
]
