"""timm's ViT key layout (``vit_*_patch14_dinov2`` models).

The DINOv2 layout (:mod:`.dinov2`) without ``mask_token``, SwiGLU as
``mlp.fc1``/``mlp.fc2``; models with registers (``*_reg4_dinov2``) use
``reg_token`` and no position embedding on the class token
(``cls_token + pos_embed[:, 0]``, ``pos_embed[:, 1:]``).
"""

import re
from collections import OrderedDict
from typing import Mapping

from .dinov2 import StateDict, mmssl_to_dinov2


def dinov2_to_timm(state_dict: Mapping) -> StateDict:
    """Convert DINOv2 hub-layout weights to timm's ViT layout.

    Args:
        state_dict (Mapping): DINOv2 backbone weights, no prefix.

    Returns:
        dict: Weights for ``timm.create_model('vit_*_patch14_dinov2')``:
        ``mask_token`` dropped; SwiGLU ``mlp.w12``/``mlp.w3`` renamed
        ``mlp.fc1``/``mlp.fc2``; with registers the class token absorbs its
        position embedding (timm ``no_embed_class``).
    """
    sd = dict(state_dict)
    sd.pop('mask_token', None)
    out: StateDict = OrderedDict()
    if 'register_tokens' in sd:
        out['reg_token'] = sd.pop('register_tokens')
        pos = sd.pop('pos_embed')  # (1, 1 + N, C)
        out['cls_token'] = sd.pop('cls_token') + pos[:, :1]
        out['pos_embed'] = pos[:, 1:]
    for key, value in sd.items():
        key = re.sub(r'^(blocks\.\d+\.mlp\.)w12\.', r'\1fc1.', key)
        key = re.sub(r'^(blocks\.\d+\.mlp\.)w3\.', r'\1fc2.', key)
        out[key] = value
    return out


def mmssl_to_timm(state_dict: Mapping) -> StateDict:
    """Convert mmssl backbone weights to timm's ViT (``*_dinov2``) layout."""
    return dinov2_to_timm(mmssl_to_dinov2(state_dict))


__all__ = ['dinov2_to_timm', 'mmssl_to_timm']
