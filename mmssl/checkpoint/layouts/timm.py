"""timm's ViT key layouts (``vit_*_dinov2`` and ``vit_*_dinov3`` models).

- ``vit_*_patch14_dinov2`` (timm ``vision_transformer.py``): the DINOv2
  layout (:mod:`.dinov2`) without ``mask_token``, SwiGLU as
  ``mlp.fc1``/``mlp.fc2``; models with registers (``*_reg4_dinov2``) use
  ``reg_token`` and no position embedding on the class token
  (``cls_token + pos_embed[:, 0]``, ``pos_embed[:, 1:]``).
- ``vit_*_patch16_dinov3[_qkvb]`` (timm ``eva.py``, the RoPE ViT of
  DINOv3): no ``pos_embed`` and no ``mask_token``; ``reg_token`` for the
  storage tokens, LayerScale as ``blocks.N.gamma_1`` / ``gamma_2``, the
  query and value biases as ``attn.q_bias`` / ``attn.v_bias`` (the key
  bias is fixed at zero; ``*_dinov3`` without ``_qkvb`` has none), SwiGLU
  as ``mlp.fc1_g`` (gate), ``mlp.fc1_x``, ``mlp.fc2``; RoPE periods are
  not stored (base 100 in every released model).
"""

import re
from collections import OrderedDict
from typing import Mapping

import torch

from .dinov2 import StateDict, dinov2_to_mmssl, mmssl_to_dinov2


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


_TIMM_FC = re.compile(r'^(blocks\.\d+\.mlp\.)fc([12])\.(weight|bias)$')


def timm_to_dinov2(state_dict: Mapping) -> StateDict:
    """Convert timm ViT weights to the DINOv2 hub layout.

    The inverse of :func:`dinov2_to_timm`, for any timm ViT with the same
    block layout (``vit_*_dinov2``, ``vit_*_patch16_224`` ...). A packed
    SwiGLU ``mlp.fc1`` (2 x hidden output rows, twice ``mlp.fc2``'s input)
    becomes ``mlp.w12``/``mlp.w3``. With ``reg_token`` (timm
    ``no_embed_class``), the class token keeps its sum with the class
    position embedding and the class position row is zero, which gives the
    same forward. Classifier keys (``head.*``) are dropped; anything else
    timm-specific (``norm_pre``, ``fc_norm``) is passed on, so that a load
    report shows it as unexpected.

    Args:
        state_dict (Mapping): timm ViT weights, no prefix.

    Returns:
        dict: DINOv2 hub-layout weights.
    """
    sd = {k: v for k, v in state_dict.items() if not k.startswith('head.')}
    out: StateDict = OrderedDict()
    if 'reg_token' in sd:
        out['register_tokens'] = sd.pop('reg_token')
        pos = sd.pop('pos_embed')  # (1, N, C), no class row
        out['pos_embed'] = torch.cat([torch.zeros_like(pos[:, :1]), pos], 1)
    for key, value in sd.items():
        match = _TIMM_FC.match(key)
        if match and _is_packed_swiglu(sd, match.group(1)):
            name = 'w12' if match.group(2) == '1' else 'w3'
            key = f'{match.group(1)}{name}.{match.group(3)}'
        out[key] = value
    return out


def _is_packed_swiglu(sd: Mapping, mlp: str) -> bool:
    fc1, fc2 = sd.get(mlp + 'fc1.weight'), sd.get(mlp + 'fc2.weight')
    if fc1 is None or fc2 is None:
        return False
    return fc1.shape[0] == 2 * fc2.shape[1]  # (2H, C) vs (C, H)


def timm_to_mmssl(state_dict: Mapping, strict: bool = False) -> StateDict:
    """Convert timm ViT weights to mmssl keys (see :func:`timm_to_dinov2`).

    Args:
        state_dict (Mapping): timm ViT weights, no prefix.
        strict (bool): Raise on keys without an mmssl counterpart. Defaults
            to False: they are dropped here and counted as unexpected by
            the warm start's load report.
    """
    return dinov2_to_mmssl(timm_to_dinov2(state_dict), strict=strict)


_EVA_BLOCK = re.compile(r'^blocks\.(\d+)\.(.+)$')
_EVA_SUB = (
    ('gamma_1', 'ls1.gamma'),
    ('gamma_2', 'ls2.gamma'),
    ('mlp.fc1_g.', 'mlp.w1.'),
    ('mlp.fc1_x.', 'mlp.w2.'),
)


def is_timm_dinov3(keys) -> bool:
    """Whether ``keys`` are a timm DINOv3 (``eva.py``) model's.

    The timm ViT markers (``patch_embed.proj.weight``, no ``mask_token``)
    with EVA's LayerScale names (``gamma_1``) and no ``pos_embed``.
    """
    keys = list(keys)
    return any(k.endswith('.gamma_1') for k in keys) and not any(
        k == 'pos_embed' or k.endswith('.pos_embed') for k in keys
    )


def timm_dinov3_to_dinov3(state_dict: Mapping) -> StateDict:
    """Convert timm DINOv3 (``eva.py``) weights to the DINOv3 hub layout.

    The query and value biases become one ``attn.qkv.bias`` with a zero
    key bias and a ``bias_mask`` that keeps it zero (the hub models'
    ``mask_k_bias``); ``mlp.fc2`` of a SwiGLU block becomes ``mlp.w3``.
    ``head.*`` is dropped; other keys are passed on under their own name.

    Args:
        state_dict (Mapping): timm DINOv3 weights, no prefix.

    Returns:
        dict: DINOv3 hub-layout weights (:mod:`.dinov3`), without
        ``mask_token`` and ``rope_embed.periods``, which timm does not keep.
    """
    sd = {k: v for k, v in state_dict.items() if not k.startswith('head.')}
    glu = {m[1] for m in map(_EVA_BLOCK.match, sd) if m and 'fc1_g' in m[2]}
    out: StateDict = OrderedDict()
    biases: dict = {}
    for key, value in sd.items():
        match = _EVA_BLOCK.match(key)
        if key == 'reg_token':
            out['storage_tokens'] = value
            continue
        if not match:
            out[key] = value
            continue
        index, rest = match.groups()
        if rest in ('attn.q_bias', 'attn.v_bias'):
            biases.setdefault(index, {})[rest[5]] = value
            continue
        if rest.startswith('mlp.fc2.') and index in glu:
            rest = 'mlp.w3.' + rest[len('mlp.fc2.') :]
        for src, dst in _EVA_SUB:
            if rest == src or (src.endswith('.') and rest.startswith(src)):
                rest = dst + rest[len(src) :]
                break
        out[f'blocks.{index}.{rest}'] = value
    for index, parts in biases.items():
        if set(parts) != {'q', 'v'}:
            raise KeyError(
                f'timm DINOv3 block {index} has only the {sorted(parts)} '
                'bias; q_bias and v_bias are needed.'
            )
        q = parts['q']
        zero = torch.zeros_like(q)
        # (3C,): query, key (zero, masked), value rows of attn.qkv
        out[f'blocks.{index}.attn.qkv.bias'] = torch.cat([q, zero, parts['v']])
        one = torch.ones_like(q)
        out[f'blocks.{index}.attn.qkv.bias_mask'] = torch.cat([one, zero, one])
    return out


__all__ = [
    'is_timm_dinov3',
    'timm_dinov3_to_dinov3',
    'dinov2_to_timm',
    'mmssl_to_timm',
    'timm_to_dinov2',
    'timm_to_mmssl',
]
