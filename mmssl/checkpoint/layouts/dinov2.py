# Copyright (c) mmssl contributors. All rights reserved.
"""DINOv2 <-> mmssl key layouts of the same ViT weights.

The layouts (:mod:`.timm` adds timm's):

- **DINOv2** (``torch.hub`` models of facebookresearch/dinov2): ``cls_token``,
  ``pos_embed``, ``register_tokens``, ``mask_token`` (1, C),
  ``patch_embed.proj.*``, ``blocks.N.{norm1,attn.qkv,attn.proj,ls1.gamma,
  norm2,mlp.fc1,mlp.fc2,ls2.gamma}`` (SwiGLU: ``mlp.w12``, ``mlp.w3``),
  ``norm.*``. Block-chunked training checkpoints (FSDP, ViT-g) name blocks
  ``blocks.<chunk>.N.*`` with the global index N.
- **mmssl** (:class:`~mmssl.models.DINOVisionTransformer`): ``cls_token``,
  ``pos_embed``, ``register_tokens``, ``mask_token`` (C,),
  ``patch_embed.projection.*``, ``layers.N.{ln1,attn.qkv,attn.proj,
  attn.gamma1.weight,ln2,ffn.layers.0.0,ffn.layers.1,ffn.gamma2.weight}``
  (SwiGLU: ``ffn.w12``, ``ffn.w3``), ``ln1.*``.
"""

import re
from collections import OrderedDict
from typing import Dict, Mapping, Optional, Sequence, Tuple

import torch

StateDict = Dict[str, torch.Tensor]

# (DINOv2 block sub-key, mmssl block sub-key)
_BLOCK_MAP: Tuple[Tuple[str, str], ...] = (
    ('norm1.', 'ln1.'),
    ('attn.qkv.', 'attn.qkv.'),
    ('attn.proj.', 'attn.proj.'),
    ('ls1.gamma', 'attn.gamma1.weight'),
    ('norm2.', 'ln2.'),
    ('mlp.fc1.', 'ffn.layers.0.0.'),
    ('mlp.fc2.', 'ffn.layers.1.'),
    ('mlp.w12.', 'ffn.w12.'),
    ('mlp.w3.', 'ffn.w3.'),
    ('ls2.gamma', 'ffn.gamma2.weight'),
)
_TOP_MAP: Tuple[Tuple[str, str], ...] = (
    ('cls_token', 'cls_token'),
    ('pos_embed', 'pos_embed'),
    ('register_tokens', 'register_tokens'),
    ('mask_token', 'mask_token'),
    ('patch_embed.proj.weight', 'patch_embed.projection.weight'),
    ('patch_embed.proj.bias', 'patch_embed.projection.bias'),
    ('norm.weight', 'ln1.weight'),
    ('norm.bias', 'ln1.bias'),
)
_DINOV2_BLOCK = re.compile(r'^blocks\.(\d+)\.(?:(\d+)\.)?(.+)$')
_MMSSL_BLOCK = re.compile(r'^layers\.(\d+)\.(.+)$')

#: Keys only a ViT backbone has, in each layout: the backbone finder's
#: ``marker`` (:func:`mmssl.checkpoint.state_dict.backbone_prefixes`).
DINOV2_MARKER = 'patch_embed.proj.weight'
MMSSL_MARKER = 'patch_embed.projection.weight'


def dinov2_to_mmssl(state_dict: Mapping, strict: bool = True) -> StateDict:
    """Convert a DINOv2 (hub or chunked) backbone state dict to mmssl keys.

    Args:
        state_dict (Mapping): DINOv2 backbone weights, no prefix.
        strict (bool): Raise on keys that are not part of the backbone
            (``head.*`` is always dropped). Defaults to True.

    Returns:
        dict: Weights for :class:`DINOVisionTransformer`.
    """
    top = dict(_TOP_MAP)
    out: StateDict = OrderedDict()
    unknown = []
    for key, value in state_dict.items():
        if key in top:
            if key == 'mask_token':
                value = value.reshape(-1)  # (1, C) -> (C,)
            out[top[key]] = value
            continue
        match = _DINOV2_BLOCK.match(key)
        if match:
            first, second, rest = match.groups()
            # chunked: blocks.<chunk>.<global index>.<rest>
            index = second if second is not None else first
            new = _map_sub(rest, _BLOCK_MAP)
            if new is not None:
                out[f'layers.{index}.{new}'] = value
                continue
        if key.startswith('head.'):
            continue
        unknown.append(key)
    if unknown and strict:
        raise KeyError(
            f'Unrecognised DINOv2 keys: {unknown[:10]}'
            f'{" ..." if len(unknown) > 10 else ""}'
        )
    return out


def mmssl_to_dinov2(
    state_dict: Mapping, num_chunks: int = 0, strict: bool = True
) -> StateDict:
    """Convert mmssl backbone weights to the DINOv2 hub layout.

    Args:
        state_dict (Mapping): :class:`DINOVisionTransformer` weights, no
            prefix.
        num_chunks (int): If > 0, write the block-chunked layout
            ``blocks.<chunk>.N.*`` with ``depth // num_chunks`` blocks per
            chunk (DINOv2 ``block_chunks``). Defaults to 0 (hub layout).
        strict (bool): Raise on keys that are not mmssl backbone keys.

    Returns:
        dict: DINOv2-layout weights.
    """
    top = {v: k for k, v in _TOP_MAP}
    block_map = tuple((m, d) for d, m in _BLOCK_MAP)
    depth = 1 + max(
        (int(m.group(1)) for m in map(_MMSSL_BLOCK.match, state_dict) if m),
        default=-1,
    )
    if num_chunks > 0 and depth % num_chunks:
        raise ValueError(
            f'num_chunks={num_chunks} does not divide the {depth} blocks.'
        )
    per_chunk = depth // num_chunks if num_chunks > 0 else 0
    out: StateDict = OrderedDict()
    unknown = []
    for key, value in state_dict.items():
        if key in top:
            if key == 'mask_token':
                value = value.reshape(1, -1)  # (C,) -> (1, C)
            out[top[key]] = value
            continue
        match = _MMSSL_BLOCK.match(key)
        new = _map_sub(match.group(2), block_map) if match else None
        if new is None:
            unknown.append(key)
            continue
        index = int(match.group(1))
        block = (
            f'blocks.{index // per_chunk}.{index}'
            if per_chunk
            else f'blocks.{index}'
        )
        out[f'{block}.{new}'] = value
    if unknown and strict:
        raise KeyError(f'Unrecognised mmssl backbone keys: {unknown[:10]}')
    return out


def _map_sub(rest: str, table: Sequence[Tuple[str, str]]) -> Optional[str]:
    for src, dst in table:
        if rest == src or (src.endswith('.') and rest.startswith(src)):
            return dst + rest[len(src) :]
    return None


__all__ = [
    'DINOV2_MARKER',
    'MMSSL_MARKER',
    'dinov2_to_mmssl',
    'mmssl_to_dinov2',
]
