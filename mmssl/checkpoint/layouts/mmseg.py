# Copyright (c) mmssl contributors. All rights reserved.
"""mmssl backbones -> the key layouts of mmsegmentation and mmdetection.

- **ViT** -> mmsegmentation's ``VisionTransformer``
  (``mmseg/models/backbones/vit.py``; the same file in the onedl fork):
  ``cls_token``, ``pos_embed`` (1, 1 + N, C, class row first),
  ``patch_embed.projection.{weight, bias}`` (``bias`` only with
  ``patch_bias=True``), ``layers.N.{ln1, attn.attn.in_proj_weight,
  attn.attn.in_proj_bias, attn.attn.out_proj, ln2, ffn.layers.0.0,
  ffn.layers.1}`` (mmcv's ``MultiheadAttention`` wraps
  ``torch.nn.MultiheadAttention`` as ``attn``; mmcv's ``FFN``), the final
  norm ``ln1`` (``final_norm=True``) and ``ln_pre`` (``pre_norm=True``).
  mmssl's fused ``attn.qkv`` rows are query, key, value, the order of
  ``in_proj_weight``. mmseg's blocks have no LayerScale: ``gamma1`` /
  ``gamma2`` are folded into ``out_proj`` and ``ffn.layers.1`` (a per
  channel scale of a linear layer's output is a scale of its rows), which
  computes the same thing. Register tokens, SwiGLU and RoPE have no
  counterpart there and are refused; ``mask_token`` (pretraining only) is
  dropped.
- **ResNet** -> mmdetection's / mmsegmentation's ``ResNet`` (``conv1``,
  ``bn1``, ``layerS.I.{conv1..3, bn1..3, downsample.0, downsample.1}``,
  the names of mmpretrain's ``ResNet``), each key behind ``backbone.``
  as MMSelfSup's benchmarks wrote them, loaded with
  ``init_cfg=dict(type='Pretrained', prefix='backbone.', ...)``.

Both conversions check the result against the full key set of the target
backbone of that size and raise on a missing or an unexpected key.
"""

import re
from collections import OrderedDict
from typing import Dict, List, Mapping, Tuple

import torch

StateDict = Dict[str, torch.Tensor]

_BLOCK = re.compile(r'^layers\.(\d+)\.(.+)$')
_NORM = ('weight', 'bias')
_BN = ('weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked')
# (mmssl block sub-key, mmseg block sub-key); LayerScale folded separately
_VIT_BLOCK = (
    ('ln1.', 'ln1.'),
    ('ln2.', 'ln2.'),
    ('attn.qkv.weight', 'attn.attn.in_proj_weight'),
    ('attn.qkv.bias', 'attn.attn.in_proj_bias'),
    ('attn.proj.', 'attn.attn.out_proj.'),
    ('ffn.layers.0.0.', 'ffn.layers.0.0.'),
    ('ffn.layers.1.', 'ffn.layers.1.'),
)
_VIT_TOP = (
    ('cls_token', 'cls_token'),
    ('pos_embed', 'pos_embed'),
    ('patch_embed.projection.', 'patch_embed.projection.'),
    ('ln1.', 'ln1.'),
    ('pre_norm.', 'ln_pre.'),
)
#: mmssl keys with no mmseg counterpart, and why.
_REFUSED = (
    ('register_tokens', 'register tokens (mmseg ViT has none)'),
    ('rope_embed.', 'RoPE (mmseg ViT has absolute position embeddings)'),
    ('.ffn.w12.', 'a SwiGLU FFN (mmseg ViT has a GELU MLP)'),
)


def mmseg_vit_keys(
    num_layers: int,
    patch_bias: bool = True,
    final_norm: bool = True,
    pre_norm: bool = False,
) -> List[str]:
    """Every state-dict key of mmseg's ``VisionTransformer`` of that depth.

    Args:
        num_layers (int): Blocks.
        patch_bias (bool): ``patch_bias`` of the backbone config.
        final_norm (bool): ``final_norm`` (the final LayerNorm ``ln1``).
        pre_norm (bool): ``pre_norm`` (``ln_pre``).
    """
    keys = ['cls_token', 'pos_embed', 'patch_embed.projection.weight']
    keys += ['patch_embed.projection.bias'] if patch_bias else []
    keys += [f'ln_pre.{n}' for n in _NORM] if pre_norm else []
    for i in range(num_layers):
        b = f'layers.{i}.'
        keys += [f'{b}ln1.{n}' for n in _NORM]
        keys += [f'{b}attn.attn.in_proj_{n}' for n in _NORM]
        keys += [f'{b}attn.attn.out_proj.{n}' for n in _NORM]
        keys += [f'{b}ln2.{n}' for n in _NORM]
        keys += [f'{b}ffn.layers.0.0.{n}' for n in _NORM]
        keys += [f'{b}ffn.layers.1.{n}' for n in _NORM]
    keys += [f'ln1.{n}' for n in _NORM] if final_norm else []
    return keys


def _sub(key: str, table) -> str:
    for src, dst in table:
        if key == src or (src.endswith('.') and key.startswith(src)):
            return dst + key[len(src) :]
    return None


def _fold_layer_scale(out: StateDict, gammas: Mapping) -> None:
    """``gamma * (W x + b)`` = ``(gamma W) x + gamma b``, row-wise."""
    for (index, which), gamma in gammas.items():
        linear = 'attn.attn.out_proj' if which == 1 else 'ffn.layers.1'
        for name in _NORM:
            key = f'layers.{index}.{linear}.{name}'
            if key not in out:
                raise KeyError(f'LayerScale of block {index} but no {key}.')
            scale = gamma if name == 'bias' else gamma[:, None]
            out[key] = out[key] * scale  # (C, ...) rows scaled


def _check_keys(out: Mapping, expected: List[str], what: str) -> None:
    missing = [k for k in expected if k not in out]
    unexpected = [k for k in out if k not in set(expected)]
    if missing or unexpected:
        raise KeyError(
            f'The converted {what} does not match its key layout: missing '
            f'{missing[:10]}, unexpected {unexpected[:10]}.'
        )


def mmssl_to_mmseg_vit(state_dict: Mapping) -> Tuple[StateDict, dict]:
    """Convert a ViT backbone (mmssl or mmpretrain layout) to mmseg's.

    Args:
        state_dict (Mapping): Backbone weights, no prefix:
            :class:`~mmssl.models.DINOVisionTransformer` or mmpretrain's
            ``VisionTransformer`` (MAE, ...).

    Returns:
        tuple: The mmseg ``VisionTransformer`` weights, and the backbone
        options they need (``embed_dims``, ``num_layers``, ``patch_size``,
        ``mlp_ratio``, ``patch_bias``, ``final_norm``, ``pre_norm``,
        ``pretrain_grid``).

    Raises:
        ValueError: Register tokens, RoPE, SwiGLU, or a qkv without bias.
        KeyError: Keys of no known meaning, or a result that misses a key
            of mmseg's layout.
    """
    for key in state_dict:
        for part, why in _REFUSED:
            if part in f'.{key}':
                raise ValueError(
                    f"{key}: the backbone has {why}; mmseg's "
                    'VisionTransformer cannot hold it. Export it to the '
                    'DINOv2/DINOv3/timm layout instead (docs/en/'
                    'checkpoints.md).'
                )
    out: StateDict = OrderedDict()
    gammas, unknown = {}, []
    for key, value in state_dict.items():
        if key == 'mask_token':
            continue  # pretraining only
        match = _BLOCK.match(key)
        if match:
            index, rest = match.groups()
            scale = re.fullmatch(r'(?:attn\.gamma1|ffn\.gamma2)\.weight', rest)
            if scale:
                gammas[(index, 1 if 'gamma1' in rest else 2)] = value
                continue
            new = _sub(rest, _VIT_BLOCK)
            new = None if new is None else f'layers.{index}.{new}'
        else:
            new = _sub(key, _VIT_TOP)
        if new is None:
            unknown.append(key)
        else:
            out[new] = value
    if unknown:
        raise KeyError(f'Unrecognised ViT backbone keys: {unknown[:10]}')
    if any(k.endswith('attn.qkv.weight') for k in state_dict) and not any(
        k.endswith('attn.qkv.bias') for k in state_dict
    ):
        raise ValueError(
            'The ViT has no qkv bias: mmseg (qkv_bias=False) then drops the '
            'output projection bias too, which this backbone has.'
        )
    _fold_layer_scale(out, gammas)
    options = _vit_options(out)
    _check_keys(
        out,
        mmseg_vit_keys(
            options['num_layers'],
            options['patch_bias'],
            options['final_norm'],
            options['pre_norm'],
        ),
        'mmseg VisionTransformer',
    )
    return out, options


def _vit_options(out: Mapping) -> dict:
    """The mmseg backbone options the converted weights need."""
    layers = {int(m[1]) for m in map(_BLOCK.match, out) if m}
    patch = out['patch_embed.projection.weight']  # (C, in, p, p)
    hidden = out['layers.0.ffn.layers.0.0.weight'].shape[0] if layers else 0
    tokens = out['pos_embed'].shape[1] - 1  # class row first
    grid = int(round(tokens**0.5))
    return dict(
        embed_dims=int(patch.shape[0]),
        num_layers=len(layers),
        patch_size=int(patch.shape[-1]),
        mlp_ratio=hidden / patch.shape[0],
        patch_bias='patch_embed.projection.bias' in out,
        final_norm='ln1.weight' in out,
        pre_norm='ln_pre.weight' in out,
        pretrain_grid=grid if grid * grid == tokens else None,
    )


#: Blocks per stage -> depth; Bottleneck blocks have conv3.
_RESNET_DEPTHS = {
    ((2, 2, 2, 2), False): 18,
    ((3, 4, 6, 3), False): 34,
    ((3, 4, 6, 3), True): 50,
    ((3, 4, 23, 3), True): 101,
    ((3, 8, 36, 3), True): 152,
}
_RESNET_BLOCK = re.compile(r'^layer(\d)\.(\d+)\.')


def resnet_keys(depth: int) -> List[str]:
    """Every state-dict key of a ``ResNet`` (mmdet/mmseg/mmpretrain names,
    the plain stem of ``ResNet``, not ``ResNetV1c``) of that depth."""
    (blocks, bottleneck) = next(
        (k for k, d in _RESNET_DEPTHS.items() if d == depth), (None, None)
    )
    if blocks is None:
        raise ValueError(f'No ResNet of depth {depth}.')
    convs = 3 if bottleneck else 2
    keys = ['conv1.weight'] + [f'bn1.{n}' for n in _BN]
    for stage, count in enumerate(blocks, 1):
        for i in range(count):
            b = f'layer{stage}.{i}.'
            for c in range(1, convs + 1):
                keys += [f'{b}conv{c}.weight']
                keys += [f'{b}bn{c}.{n}' for n in _BN]
            # stage 1 of a BasicBlock ResNet keeps 64 channels: no shortcut
            if i == 0 and (bottleneck or stage > 1):
                keys += [f'{b}downsample.0.weight']
                keys += [f'{b}downsample.1.{n}' for n in _BN]
    return keys


def mmssl_to_mmdet_resnet(
    state_dict: Mapping, prefix: str = 'backbone.'
) -> Tuple[StateDict, int]:
    """Check a ResNet backbone's keys and put ``prefix`` in front.

    Args:
        state_dict (Mapping): ResNet backbone weights, no prefix.
        prefix (str): Written before each key. Defaults to ``'backbone.'``.

    Returns:
        tuple: The prefixed weights and the ResNet depth.

    Raises:
        KeyError: A key outside the ResNet layout of that depth, or one
            of its keys missing.
        ValueError: Blocks per stage of no ResNet depth.
    """
    counts = [0, 0, 0, 0]
    for key in state_dict:
        match = _RESNET_BLOCK.match(key)
        if match and 1 <= int(match[1]) <= 4:
            stage = int(match[1]) - 1
            counts[stage] = max(counts[stage], int(match[2]) + 1)
    bottleneck = any('.conv3.' in k for k in state_dict)
    depth = _RESNET_DEPTHS.get((tuple(counts), bottleneck))
    if depth is None:
        kind = 'Bottleneck' if bottleneck else 'BasicBlock'
        raise ValueError(
            f'Blocks per stage {counts} ({kind}) are no ResNet-18/34/50/'
            '101/152; is this a ResNet backbone?'
        )
    _check_keys(state_dict, resnet_keys(depth), f'ResNet-{depth}')
    out = OrderedDict((prefix + k, v) for k, v in state_dict.items())
    return out, depth


__all__ = [
    'mmseg_vit_keys',
    'mmssl_to_mmdet_resnet',
    'mmssl_to_mmseg_vit',
    'resnet_keys',
]
