"""Key layouts of the same weights in other projects, and the conversions.

* :mod:`.dinov2`: facebookresearch/dinov2 hub and training files.
* :mod:`.dinov3`: facebookresearch/dinov3 hub files and HF transformers
  ``DINOv3ViTModel`` weights.
* :mod:`.timm`: timm's ``vit_*_dinov2`` and ``vit_*_dinov3`` models.
* :mod:`.pos_embed`: the one position-embedding resize.
"""

from .dinov2 import (
    DINOV2_MARKER,
    MMSSL_MARKER,
    dinov2_to_mmssl,
    mmssl_to_dinov2,
)
from .dinov3 import (
    DINOV3_MARKER,
    HF_DINOV3_MARKER,
    dinov3_to_mmssl,
    hf_dinov3_rope_periods,
    hf_dinov3_to_mmssl,
    mmssl_to_dinov3,
    read_hf_config,
)
from .pos_embed import resize_pos_embed, square_grid
from .timm import (
    dinov2_to_timm,
    is_timm_dinov3,
    mmssl_to_timm,
    timm_dinov3_to_dinov3,
)

__all__ = [
    'DINOV2_MARKER',
    'DINOV3_MARKER',
    'HF_DINOV3_MARKER',
    'MMSSL_MARKER',
    'dinov2_to_mmssl',
    'dinov2_to_timm',
    'dinov3_to_mmssl',
    'hf_dinov3_rope_periods',
    'hf_dinov3_to_mmssl',
    'is_timm_dinov3',
    'mmssl_to_dinov2',
    'mmssl_to_dinov3',
    'mmssl_to_timm',
    'read_hf_config',
    'resize_pos_embed',
    'square_grid',
    'timm_dinov3_to_dinov3',
]
