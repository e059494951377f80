# Copyright (c) mmssl contributors. All rights reserved.
"""Parameter count of a :class:`DINOVisionTransformer` without building
it."""

from typing import Union

from .dino_vit import DINOVisionTransformer


def count_dino_vit_params(
    arch: Union[str, dict] = 'small',
    img_size: int = 518,
    patch_size: int = 14,
    num_register_tokens: int = 0,
    in_channels: int = 3,
) -> int:
    """Count the parameters of a :class:`DINOVisionTransformer` analytically.

    Useful for large presets (ViT-g ~1.1B) without allocating them; it
    matches ``sum(p.numel() for p in model.parameters())``.
    """
    s = DINOVisionTransformer._resolve_arch(arch)
    C, L, hidden = s['embed_dims'], s['num_layers'], s['feedforward_channels']
    grid = (img_size // patch_size) ** 2
    n = C * in_channels * patch_size**2 + C  # patch embed
    n += (1 + grid) * C + C + C + num_register_tokens * C  # pos, cls, mask
    per_block = 2 * 2 * C  # two LayerNorms
    per_block += 3 * C * C + 3 * C + C * C + C  # qkv, proj
    per_block += 2 * C  # two LayerScales
    if s.get('ffn_type', 'origin') == 'swiglu_fused':
        h = (int(hidden * 2 / 3) + 7) // 8 * 8
        per_block += C * 2 * h + 2 * h + h * C + C
    else:
        per_block += C * hidden + hidden + hidden * C + C
    return n + L * per_block + 2 * C  # final norm


__all__ = ['count_dino_vit_params']
