"""Building blocks of the ViT backbones, one concept per file: attention,
FFN (MLP or SwiGLU), LayerScale, the ViT block, stochastic depth, token
packing, 2D RoPE, patch embedding and the mask token."""

from .attention import Attention, MaskedBiasLinear
from .block import DINOBlock
from .drop_path import DROP_PATH_MODES, DROP_PATH_SCHEDULES
from .ffn import FFN_TYPES, build_ffn, swiglu_hidden_dims
from .layer_scale import LayerScale
from .patch_embed import PatchEmbed
from .rope import RoPE2D, apply_rope
from .token_packing import TokenGroups, pack_tokens, unpack_tokens

__all__ = [
    'Attention',
    'DINOBlock',
    'DROP_PATH_MODES',
    'DROP_PATH_SCHEDULES',
    'FFN_TYPES',
    'LayerScale',
    'MaskedBiasLinear',
    'PatchEmbed',
    'RoPE2D',
    'TokenGroups',
    'apply_rope',
    'build_ffn',
    'pack_tokens',
    'swiglu_hidden_dims',
    'unpack_tokens',
]
