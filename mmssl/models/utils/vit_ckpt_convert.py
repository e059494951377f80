# Copyright (c) mmssl contributors. All rights reserved.
"""Key-layout conversion between DINOv2, timm and mmssl ViT checkpoints.

Three layouts of the same ViT weights:

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
- **timm** (``vit_*_patch14_dinov2``): the DINOv2 layout without
  ``mask_token``, SwiGLU as ``mlp.fc1``/``mlp.fc2``; models with registers
  (``*_reg4_dinov2``) use ``reg_token`` and no position embedding on the
  class token (``cls_token + pos_embed[:, 0]``, ``pos_embed[:, 1:]``).
"""

import re
from collections import OrderedDict
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

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

#: Markers used to find the backbone inside a whole checkpoint.
_DINOV2_MARKER = 'patch_embed.proj.weight'
_MMSSL_MARKER = 'patch_embed.projection.weight'


def unwrap_checkpoint(ckpt: Mapping) -> StateDict:
    """Return the tensor dict of a checkpoint.

    Accepts a plain state dict or one nested under ``'state_dict'``,
    ``'model'``, ``'teacher'`` or ``'module'`` (mmengine, DINOv2 training
    and ``teacher_checkpoint.pth`` files).
    """
    for key in ('state_dict', 'model', 'teacher', 'module'):
        if key in ckpt and isinstance(ckpt[key], Mapping):
            return unwrap_checkpoint(ckpt[key])
    return dict(ckpt)


def find_backbone_prefixes(state_dict: Mapping, marker: str) -> List[str]:
    """Prefixes of every backbone in ``state_dict``, teacher ones first.

    A backbone is recognised by its patch-embedding weight ``marker``.
    """
    prefixes = [k[: -len(marker)] for k in state_dict if k.endswith(marker)]
    return sorted(prefixes, key=lambda p: ('teacher' not in p, len(p), p))


def select_prefix(
    state_dict: Mapping,
    prefix: Optional[str] = None,
    marker: str = _MMSSL_MARKER,
) -> StateDict:
    """Keep the keys under ``prefix`` (auto-detected if None), stripped.

    With ``prefix=None`` the backbone is found by its patch-embedding key;
    when several exist (student and teacher) the teacher is taken.

    Raises:
        KeyError: If no backbone is found under the prefix.
    """
    if prefix is None:
        found = find_backbone_prefixes(state_dict, marker)
        if not found:
            raise KeyError(
                f'No ViT backbone found: no key ends with {marker!r}. Pass '
                'the prefix explicitly (e.g. --src-prefix backbone.).'
            )
        prefix = found[0]
    out = {
        k[len(prefix) :]: v
        for k, v in state_dict.items()
        if k.startswith(prefix)
    }
    if marker not in out:
        raise KeyError(
            f'No {marker!r} under prefix {prefix!r}; prefixes '
            f'found: {find_backbone_prefixes(state_dict, marker)}'
        )
    return out


def add_prefix(
    state_dict: Mapping, prefixes: Iterable[str] = ('',)
) -> StateDict:
    """Copy ``state_dict`` once under each prefix (e.g. ``'backbone.'`` and
    ``'teacher.backbone.'``)."""
    out: StateDict = OrderedDict()
    for prefix in prefixes:
        for k, v in state_dict.items():
            out[prefix + k] = v
    return out


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


def dinov2_to_timm(state_dict: Mapping) -> StateDict:
    """Convert DINOv2 hub-layout weights to timm's ViT layout.

    Mirrors timm's DINOv2 checkpoint filter: drop ``mask_token``; SwiGLU
    ``mlp.w12``/``mlp.w3`` become ``mlp.fc1``/``mlp.fc2``; with registers
    the class token absorbs its position embedding (timm ``no_embed_class``).
    """
    sd = dict(state_dict)
    sd.pop('mask_token', None)
    out: StateDict = OrderedDict()
    if 'register_tokens' in sd:
        out['reg_token'] = sd.pop('register_tokens')
        pos = sd.pop('pos_embed')
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


def load_checkpoint_file(path: str) -> dict:
    """``torch.load`` on CPU, tensors-only first.

    Full unpickling (needed for mmengine checkpoints whose ``message_hub``
    holds Python objects) is only tried when the safe load fails, with a
    warning: convert only checkpoints you trust.
    """
    try:
        return torch.load(path, map_location='cpu', weights_only=True)
    except Exception:  # noqa: BLE001 - fall back to a full load below
        import warnings

        warnings.warn(
            f'{path} holds non-tensor objects; loading it with '
            'weights_only=False (only do this for trusted files).'
        )
        return torch.load(path, map_location='cpu', weights_only=False)


def _map_sub(rest: str, table: Sequence[Tuple[str, str]]) -> Optional[str]:
    for src, dst in table:
        if rest == src or (src.endswith('.') and rest.startswith(src)):
            return dst + rest[len(src) :]
    return None


__all__ = [
    'unwrap_checkpoint',
    'find_backbone_prefixes',
    'select_prefix',
    'add_prefix',
    'dinov2_to_mmssl',
    'mmssl_to_dinov2',
    'dinov2_to_timm',
    'mmssl_to_timm',
    'load_checkpoint_file',
]
