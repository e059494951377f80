from .blockwise_mask import BlockwiseMaskGenerator, blockwise_mask
from .multi_crop import MultiCrop

__all__ = ['MultiCrop', 'BlockwiseMaskGenerator', 'blockwise_mask']
