# Copyright (c) mmssl contributors. All rights reserved.
"""HF transformers ``Dinov2Model`` -> mmssl key layout.

The layout of ``transformers``' ``Dinov2Model`` (and
``Dinov2WithRegistersModel``) safetensors files, as saved by
``save_pretrained`` (no prefix; ``dinov2.`` inside task models):

- ``embeddings.cls_token`` (1, 1, C), ``embeddings.mask_token`` (1, C),
  ``embeddings.register_tokens`` (1, R, C), ``embeddings.position_embeddings``
  (1, 1 + N, C), ``embeddings.patch_embeddings.projection.{weight,bias}``;
- ``encoder.layer.N.norm1``, ``.attention.attention.{query,key,value}``
  (three C x C projections), ``.attention.output.dense``,
  ``.layer_scale1.lambda1``, ``.norm2``, ``.mlp.fc1`` / ``.mlp.fc2``
  (SwiGLU: ``.mlp.weights_in`` / ``.mlp.weights_out``),
  ``.layer_scale2.lambda1``;
- ``layernorm.{weight,bias}``.

transformers 5 renames these when it loads a file, so a state dict saved
from a model in memory (``save_file(model.state_dict(), ...)``) names
``.attention.{q,k,v,o}_proj`` and, for SwiGLU, ``.mlp.gate_proj`` /
``.mlp.up_proj`` (the two halves of ``weights_in``, gate first) and
``.mlp.down_proj``; both spellings are read.

mmssl's :class:`~mmssl.models.DINOVisionTransformer` has one fused
``attn.qkv`` projection: its rows are query, key, value stacked in that
order (the DINOv2 ``qkv`` layout).
"""

import re
from collections import OrderedDict
from typing import Mapping

import torch

from .dinov2 import StateDict, _map_sub

#: Key only an HF ``Dinov2Model`` has (the format detector's marker).
HF_DINOV2_MARKER = 'embeddings.patch_embeddings.projection.weight'

_TOP = {
    'embeddings.cls_token': 'cls_token',
    'embeddings.mask_token': 'mask_token',
    'embeddings.register_tokens': 'register_tokens',
    'embeddings.position_embeddings': 'pos_embed',
    'embeddings.patch_embeddings.projection.weight': (
        'patch_embed.projection.weight'
    ),
    'embeddings.patch_embeddings.projection.bias': (
        'patch_embed.projection.bias'
    ),
    'layernorm.weight': 'ln1.weight',
    'layernorm.bias': 'ln1.bias',
}
_BLOCK = (
    ('norm1.', 'ln1.'),
    ('attention.output.dense.', 'attn.proj.'),
    ('attention.o_proj.', 'attn.proj.'),
    ('layer_scale1.lambda1', 'attn.gamma1.weight'),
    ('norm2.', 'ln2.'),
    ('mlp.fc1.', 'ffn.layers.0.0.'),
    ('mlp.fc2.', 'ffn.layers.1.'),
    ('mlp.weights_in.', 'ffn.w12.'),
    ('mlp.weights_out.', 'ffn.w3.'),
    ('mlp.down_proj.', 'ffn.w3.'),
    ('layer_scale2.lambda1', 'ffn.gamma2.weight'),
)
_LAYER = re.compile(r'^encoder\.layer\.(\d+)\.(.+)$')
_QKV = re.compile(
    r'^attention\.(?:attention\.(query|key|value)|([qkv])_proj)\.'
    r'(weight|bias)$'
)
_GLU = re.compile(r'^mlp\.(gate|up)_proj\.(weight|bias)$')
_QKV_NAME = {'q': 'query', 'k': 'key', 'v': 'value'}


def _fuse(
    out: StateDict, parts: dict, names: tuple, dst: str, what: str
) -> None:
    """``parts[(index, kind)][name]`` stacked on dim 0 in ``names``
    order into ``layers.<index>.<dst>.<kind>``."""
    for (index, kind), found in sorted(parts.items()):
        if set(found) != set(names):
            raise KeyError(
                f'encoder.layer.{index}.{what} has only {sorted(found)} '
                f'{kind}s; {", ".join(names)} are needed.'
            )
        # rows of the first part, then the next ...
        out[f'layers.{index}.{dst}.{kind}'] = torch.cat(
            [found[n] for n in names]
        )


def hf_dinov2_to_mmssl(state_dict: Mapping, strict: bool = True) -> StateDict:
    """Convert HF ``Dinov2Model`` weights (no prefix) to mmssl keys.

    Args:
        state_dict (Mapping): ``Dinov2Model`` weights, prefix removed.
        strict (bool): Raise on keys that are not part of the backbone;
            if False they are kept under their own name (so a load report
            lists them as unexpected). Defaults to True.

    Returns:
        dict: Weights for :class:`DINOVisionTransformer`; query, key and
        value are concatenated (on dim 0) into ``attn.qkv``, SwiGLU gate
        and up projections into ``ffn.w12``.

    Raises:
        KeyError: Unknown keys (``strict``), or a block without all of
            query, key and value (gate and up).
    """
    out: StateDict = OrderedDict()
    qkv: dict = {}
    glu: dict = {}
    unknown = []
    for key, value in state_dict.items():
        if key in _TOP:
            if key == 'embeddings.mask_token':
                value = value.reshape(-1)  # (1, C) -> (C,)
            out[_TOP[key]] = value
            continue
        match = _LAYER.match(key)
        if match:
            index, rest = match.groups()
            part = _QKV.match(rest)
            if part:
                name = part[1] or _QKV_NAME[part[2]]
                qkv.setdefault((index, part[3]), {})[name] = value
                continue
            part = _GLU.match(rest)
            if part:
                glu.setdefault((index, part[2]), {})[part[1]] = value
                continue
            new = _map_sub(rest, _BLOCK)
            if new is not None:
                out[f'layers.{index}.{new}'] = value
                continue
        unknown.append(key)
    # (3C, C) / (3C,): rows of query, then key, then value
    _fuse(out, qkv, ('query', 'key', 'value'), 'attn.qkv', 'attention')
    # (2H, C) / (2H,): the gate rows first, as in ``weights_in``
    _fuse(out, glu, ('gate', 'up'), 'ffn.w12', 'mlp')
    if unknown and strict:
        raise KeyError(
            f'Unrecognised HF Dinov2Model keys: {unknown[:10]}'
            f'{" ..." if len(unknown) > 10 else ""}'
        )
    out.update((k, state_dict[k]) for k in unknown)
    return out


__all__ = ['HF_DINOV2_MARKER', 'hf_dinov2_to_mmssl']
