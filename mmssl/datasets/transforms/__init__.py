from .blockwise_mask import BlockwiseMaskGenerator, blockwise_mask
from .channel_jitter import ChannelIntensityJitter
from .color_jitter import HueSafeColorJitter
from .loading import BadImageError, LoadImageRobust, scale_to_uint8
from .mixed_resolution_crop import MixedResolutionMultiCrop
from .multi_crop import MultiCrop
from .multichannel_multi_crop import MultiChannelMultiCrop
from .relative_loc import RelativeLocPatches
from .rgb_only import RGB_ONLY, check_channel_pipeline
from .tiff_loading import LoadMultiChannelTiff
from .volume import LoadVolume, MONAITransform
from .volume_multi_crop import (
    BlockwiseMaskGenerator3D,
    MultiCrop3D,
    blockwise_mask_3d,
)

__all__ = [
    'MultiCrop',
    'MultiChannelMultiCrop',
    'MixedResolutionMultiCrop',
    'BlockwiseMaskGenerator',
    'blockwise_mask',
    'LoadImageRobust',
    'BadImageError',
    'scale_to_uint8',
    'RelativeLocPatches',
    'HueSafeColorJitter',
    'ChannelIntensityJitter',
    'LoadMultiChannelTiff',
    'RGB_ONLY',
    'check_channel_pipeline',
    'LoadVolume',
    'MONAITransform',
    'MultiCrop3D',
    'BlockwiseMaskGenerator3D',
    'blockwise_mask_3d',
]
