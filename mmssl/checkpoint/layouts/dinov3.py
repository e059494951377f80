# Copyright (c) mmssl contributors. All rights reserved.
"""DINOv3 <-> mmssl key layouts of the same RoPE ViT weights.

The layouts of Siméoni et al., 2025, `DINOv3
<https://arxiv.org/abs/2508.10104>`_:

- **DINOv3 hub** (``torch.hub`` models and ``.pth`` files of
  facebookresearch/dinov3): ``cls_token`` (1, 1, C), ``storage_tokens``
  (1, R, C), ``mask_token`` (1, C), ``patch_embed.proj.*``,
  ``rope_embed.periods`` (head_dims / 4,), ``blocks.N.{norm1, attn.qkv
  (weight, bias, bias_mask), attn.proj, ls1.gamma, norm2, mlp.fc1, mlp.fc2
  | mlp.w1, mlp.w2, mlp.w3, ls2.gamma}``, ``norm.*`` and, in some models,
  ``cls_norm.*`` / ``local_cls_norm.*``.
- **mmssl** (:class:`~mmssl.models.DINOv3ViT`): ``cls_token``,
  ``register_tokens``, ``mask_token`` (C,), ``patch_embed.projection.*``,
  ``rope_embed.periods``, ``layers.N.{ln1, attn.qkv (weight, bias,
  bias_mask), attn.proj, ls1.gamma, ln2, ffn.fc1, ffn.fc2 | ffn.w1, ffn.w2,
  ffn.w3, ls2.gamma}``, ``norm.*``, ``cls_norm.*``, ``local_cls_norm.*``.
- **HF transformers** ``DINOv3ViTModel``: ``embeddings.{cls_token,
  mask_token (1, 1, C), register_tokens, patch_embeddings.*}``,
  ``layer.N.{norm1, attention.{q,k,v,o}_proj, layer_scale1.lambda1, norm2,
  mlp.{up,down}_proj | mlp.{gate,up,down}_proj, layer_scale2.lambda1}``,
  ``norm.*``; q, k and v are separate, the key has no bias when it is
  masked, and the RoPE periods are not stored: they follow from
  ``rope_theta`` in the model's ``config.json``
  (:func:`hf_dinov3_rope_periods`). transformers 5 keeps the blocks under
  ``model.layer.N`` in memory, so a state dict saved from a live model has
  that prefix; both spellings are read.
"""

import json
import os.path as osp
import re
from collections import OrderedDict
from typing import Dict, List, Mapping, Optional, Tuple

import torch

from .dinov2 import _map_sub

StateDict = Dict[str, torch.Tensor]

# (DINOv3 hub block sub-key, mmssl block sub-key)
_BLOCK_MAP: Tuple[Tuple[str, str], ...] = (
    ('norm1.', 'ln1.'),
    ('attn.qkv.', 'attn.qkv.'),
    ('attn.proj.', 'attn.proj.'),
    ('ls1.gamma', 'ls1.gamma'),
    ('norm2.', 'ln2.'),
    ('mlp.fc1.', 'ffn.fc1.'),
    ('mlp.fc2.', 'ffn.fc2.'),
    ('mlp.w1.', 'ffn.w1.'),
    ('mlp.w2.', 'ffn.w2.'),
    ('mlp.w3.', 'ffn.w3.'),
    ('ls2.gamma', 'ls2.gamma'),
)
_TOP_MAP: Tuple[Tuple[str, str], ...] = (
    ('cls_token', 'cls_token'),
    ('storage_tokens', 'register_tokens'),
    ('mask_token', 'mask_token'),
    ('patch_embed.proj.', 'patch_embed.projection.'),
    ('rope_embed.periods', 'rope_embed.periods'),
    ('norm.', 'norm.'),
    ('cls_norm.', 'cls_norm.'),
    ('local_cls_norm.', 'local_cls_norm.'),
)
_HUB_BLOCK = re.compile(r'^blocks\.(\d+)\.(.+)$')
_MMSSL_BLOCK = re.compile(r'^layers\.(\d+)\.(.+)$')
# ``layer.N`` in files, ``model.layer.N`` in memory (transformers 5)
_HF_BLOCK = re.compile(r'^(?:model\.)?layer\.(\d+)\.(.+)$')

#: Backbone finder markers. The hub patch key is the one DINOv2 uses too;
#: ``rope_embed.periods`` tells a DINOv3 file (hub or mmssl) apart.
DINOV3_MARKER = 'patch_embed.proj.weight'
HF_DINOV3_MARKER = 'embeddings.cls_token'


def _unknown_error(unknown: List[str], layout: str) -> KeyError:
    more = ' ...' if len(unknown) > 10 else ''
    return KeyError(f'Unrecognised {layout} keys: {unknown[:10]}{more}')


def _rename(
    state_dict: Mapping,
    top: Tuple[Tuple[str, str], ...],
    block: Tuple[Tuple[str, str], ...],
    src: re.Pattern,
    dst_block: str,
) -> Tuple[StateDict, List[str]]:
    out: StateDict = OrderedDict()
    unknown = []
    for key, value in state_dict.items():
        new = _map_sub(key, top)
        if new is None:
            match = src.match(key)
            sub = _map_sub(match.group(2), block) if match else None
            new = None if sub is None else f'{dst_block}.{match[1]}.{sub}'
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    return out, unknown


def dinov3_to_mmssl(state_dict: Mapping, strict: bool = True) -> StateDict:
    """Convert a DINOv3 hub backbone state dict to mmssl keys.

    Args:
        state_dict (Mapping): DINOv3 backbone weights, no prefix.
        strict (bool): Raise on keys that are not part of the backbone
            (``head.*`` is always dropped). Defaults to True.

    Returns:
        dict: Weights for :class:`~mmssl.models.DINOv3ViT`.

    Raises:
        KeyError: Unknown keys with ``strict``; the first ten are named.
    """
    body = {k: v for k, v in state_dict.items() if not k.startswith('head.')}
    out, unknown = _rename(body, _TOP_MAP, _BLOCK_MAP, _HUB_BLOCK, 'layers')
    if unknown and strict:
        raise _unknown_error(unknown, 'DINOv3')
    if 'mask_token' in out:
        out['mask_token'] = out['mask_token'].reshape(-1)  # (1, C) -> (C,)
    return out


def mmssl_to_dinov3(
    state_dict: Mapping, add_bias_mask: bool = True, strict: bool = True
) -> StateDict:
    """Convert mmssl :class:`~mmssl.models.DINOv3ViT` weights to the hub
    layout.

    Args:
        state_dict (Mapping): mmssl backbone weights, no prefix.
        add_bias_mask (bool): For a model built with ``mask_k_bias=False``
            (a qkv bias but no ``bias_mask``), write an all-ones
            ``bias_mask``: the hub models (all built with ``mask_k_bias``)
            then load it strictly and compute exactly the same thing.
            Defaults to True.
        strict (bool): Raise on keys that are not mmssl backbone keys.

    Returns:
        dict: DINOv3 hub-layout weights.
    """
    top = tuple((m, d) for d, m in _TOP_MAP)
    block = tuple((m, d) for d, m in _BLOCK_MAP)
    out, unknown = _rename(state_dict, top, block, _MMSSL_BLOCK, 'blocks')
    if unknown and strict:
        raise _unknown_error(unknown, 'mmssl backbone')
    if 'mask_token' in out:
        out['mask_token'] = out['mask_token'].reshape(1, -1)  # (C,) -> (1, C)
    if add_bias_mask:
        for key in [k for k in out if k.endswith('.attn.qkv.bias')]:
            mask_key = key + '_mask'
            if mask_key not in out:
                out[mask_key] = torch.ones_like(out[key])
    return out


# HF transformers sub-keys; q/k/v are fused separately.
_HF_BLOCK_MAP: Tuple[Tuple[str, str], ...] = (
    ('norm1.', 'ln1.'),
    ('attention.o_proj.', 'attn.proj.'),
    ('layer_scale1.lambda1', 'ls1.gamma'),
    ('norm2.', 'ln2.'),
    ('layer_scale2.lambda1', 'ls2.gamma'),
    ('mlp.gate_proj.', 'ffn.w1.'),
    ('mlp.down_proj.', '{down}.'),
    ('mlp.up_proj.', '{up}.'),
)
_HF_TOP_MAP: Tuple[Tuple[str, str], ...] = (
    ('embeddings.cls_token', 'cls_token'),
    ('embeddings.register_tokens', 'register_tokens'),
    ('embeddings.mask_token', 'mask_token'),
    ('embeddings.patch_embeddings.proj.', 'patch_embed.projection.'),
    ('embeddings.patch_embeddings.projection.', 'patch_embed.projection.'),
    ('embeddings.patch_embeddings.', 'patch_embed.projection.'),
    ('norm.', 'norm.'),
)
_HF_QKV = re.compile(r'^attention\.([qkv])_proj\.(weight|bias)$')


def _fuse_qkv(index: str, parts: Dict[str, torch.Tensor]) -> StateDict:
    """q/k/v projections of block ``index`` -> fused ``attn.qkv.*``."""
    prefix = f'layers.{index}.attn.qkv.'
    missing = [f'{c}.weight' for c in 'qkv' if f'{c}.weight' not in parts]
    if missing:
        raise KeyError(f'HF block {index} lacks attention {missing}.')
    out = {prefix + 'weight': torch.cat([parts[f'{c}.weight'] for c in 'qkv'])}
    if 'q.bias' in parts or 'v.bias' in parts:
        q = parts['q.weight']
        biases, mask = [], []
        for c in 'qkv':
            b = parts.get(f'{c}.bias')
            # the key bias is not stored when it is masked: zero, masked
            biases.append(b if b is not None else q.new_zeros(q.shape[0]))
            mask.append(torch.full((q.shape[0],), float(b is not None)))
        out[prefix + 'bias'] = torch.cat(biases)
        out[prefix + 'bias_mask'] = torch.cat(mask).to(q.dtype)
    return out


def hf_dinov3_to_mmssl(state_dict: Mapping, strict: bool = True) -> StateDict:
    """Convert HF transformers ``DINOv3ViTModel`` weights to mmssl keys.

    Args:
        state_dict (Mapping): ``model.safetensors`` weights, no prefix.
        strict (bool): Raise on unknown keys. Defaults to True.

    Returns:
        dict: Weights for :class:`~mmssl.models.DINOv3ViT` (without
        ``rope_embed.periods``, which the model computes itself).
    """
    gated = {
        m[1] for m in map(_HF_BLOCK.match, state_dict) if m and 'gate' in m[2]
    }
    out: StateDict = OrderedDict()
    qkv: Dict[str, Dict[str, torch.Tensor]] = {}
    unknown = []
    for key, value in state_dict.items():
        if key.startswith('rope_embeddings.'):
            continue  # computed on the fly (inv_freq), not a weight
        new = _map_sub(key, _HF_TOP_MAP)
        match = None if new is not None else _HF_BLOCK.match(key)
        if match:
            index, rest = match.groups()
            qkv_match = _HF_QKV.match(rest)
            if qkv_match:
                name = f'{qkv_match[1]}.{qkv_match[2]}'
                qkv.setdefault(index, {})[name] = value
                continue
            sub = _map_sub(rest, _HF_BLOCK_MAP)
            if sub is not None:
                glu = index in gated
                sub = sub.format(
                    up='ffn.w2' if glu else 'ffn.fc1',
                    down='ffn.w3' if glu else 'ffn.fc2',
                )
                new = f'layers.{index}.{sub}'
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    if unknown and strict:
        raise _unknown_error(unknown, 'HF DINOv3ViT')
    for index in sorted(qkv, key=int):
        out.update(_fuse_qkv(index, qkv[index]))
    if 'mask_token' in out:
        out['mask_token'] = out['mask_token'].reshape(-1)  # (1,1,C) -> (C,)
    return out


def hf_dinov3_rope_periods(config: Mapping) -> torch.Tensor:
    """The RoPE periods a ``DINOv3ViTConfig`` (``config.json``) implies.

    transformers computes ``inv_freq = 1 / rope_theta ** (4 i / head_dim)``;
    mmssl's :class:`~mmssl.models.layers.rope.RoPE2D` stores the periods
    ``rope_theta ** (4 i / head_dim)``, the same rotation. Loading these
    periods into ``rope_embed.periods`` carries any base over exactly.

    Args:
        config (Mapping): The parsed ``config.json``; reads ``rope_theta``
            (or ``rope_parameters['rope_theta']``; default 100),
            ``hidden_size`` and ``num_attention_heads``.

    Returns:
        Tensor: Periods (head_dim // 4,), float32.

    Raises:
        ValueError: A RoPE the backbone cannot compute: a ``rope_type``
            other than the default, a scaling, a base that is not a
            positive finite number, or a head width not a multiple of 4.
    """
    params = dict(config.get('rope_parameters') or {})
    rope_type = params.get('rope_type', 'default')
    scaling = config.get('rope_scaling')
    if rope_type != 'default' or scaling:
        raise ValueError(
            f'HF DINOv3 config has RoPE type {rope_type!r} / scaling '
            f"{scaling!r}; mmssl's DINOv3ViT computes only the default "
            'DINOv3 periods (rope_theta ** (4 i / head_dim)).'
        )
    theta = params.get('rope_theta', config.get('rope_theta', 100.0))
    if not isinstance(theta, (int, float)) or not 0 < theta < float('inf'):
        raise ValueError(
            f'HF DINOv3 config rope_theta={theta!r}: the RoPE base must be '
            'a positive finite number.'
        )
    heads = int(config.get('num_attention_heads', 0))
    width = int(config.get('hidden_size', 0))
    if heads <= 0 or width % heads or (width // heads) % 4:
        raise ValueError(
            f'HF DINOv3 config hidden_size={width}, num_attention_heads='
            f'{heads}: the head width must be a multiple of 4 for 2D RoPE.'
        )
    head_dim = width // heads
    # rope_periods() of mmssl.models.layers.rope (checkpoint/ must not
    # import models/): float64 powers, stored as float32
    exponents = torch.arange(head_dim // 4, dtype=torch.float64)
    return (float(theta) ** (4.0 * exponents / head_dim)).float()


def read_hf_config(path: str) -> Optional[dict]:
    """The ``config.json`` beside an HF weight file, or None."""
    cfg = osp.join(osp.dirname(osp.abspath(path)), 'config.json')
    if not osp.isfile(cfg):
        return None
    with open(cfg, encoding='utf-8') as f:
        return json.load(f)


__all__ = [
    'DINOV3_MARKER',
    'read_hf_config',
    'HF_DINOV3_MARKER',
    'dinov3_to_mmssl',
    'hf_dinov3_rope_periods',
    'hf_dinov3_to_mmssl',
    'mmssl_to_dinov3',
]
