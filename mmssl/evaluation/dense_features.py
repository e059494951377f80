"""Frozen patch features for the dense probes (segmentation, depth).

The backbone of a config is built alone, as it will run: a ViT with
``out_type='raw'`` and the last ``n_layers`` blocks as outputs (DINOv2's
linear probes use the last layer, or the last four concatenated, Oquab et
al. 2023, https://arxiv.org/abs/2304.07193, Sec. 7.4); a convolutional
backbone keeps its outputs (the last stage is used). Images are normalised
with the config's data preprocessor statistics.
"""

import inspect
import math
from typing import Optional, Tuple

import numpy as np
import torch
from torch import nn


def random_init_cfg(init_cfg):
    """``init_cfg`` without the entries that load weights (``Pretrained``):
    the random init that training starts from (a config's Xavier or
    truncated-normal rules), never a file or a download."""
    if init_cfg is None:
        return None
    items = init_cfg if isinstance(init_cfg, (list, tuple)) else [init_cfg]
    kept = [dict(c) for c in items if c.get('type') != 'Pretrained']
    return kept or None


def build_dense_backbone(cfg, n_layers: int = 1) -> nn.Module:
    """The config's backbone, returning the last ``n_layers`` token maps.

    Args:
        cfg: The config (``cfg.model.backbone``).
        n_layers (int): Blocks whose outputs are concatenated (ViTs).
    """
    from mmssl.registry import MODELS

    bcfg = dict(cfg.model.backbone)
    init_cfg = random_init_cfg(bcfg.pop('init_cfg', None))
    if init_cfg:  # applied by init_weights(), as at the start of training
        bcfg['init_cfg'] = init_cfg
    cls = MODELS.get(bcfg['type'])
    if cls is None:
        raise KeyError(f'backbone type {bcfg["type"]!r} is not registered')
    params = inspect.signature(cls.__init__).parameters
    if 'out_type' in params:
        bcfg['out_type'] = 'raw'
        bcfg['out_indices'] = list(range(-n_layers, 0))
    return MODELS.build(bcfg)


def preprocess_stats(cfg) -> Tuple[np.ndarray, np.ndarray, bool]:
    """``(mean, std, to_rgb)`` of the config's data preprocessor."""
    pre = dict(cfg.model.get('data_preprocessor') or {})
    mean = np.array(pre.get('mean', [123.675, 116.28, 103.53]), np.float32)
    std = np.array(pre.get('std', [58.395, 57.12, 57.375]), np.float32)
    return mean, std, bool(pre.get('to_rgb', pre.get('bgr_to_rgb', True)))


def to_tensor(images: list, mean, std, to_rgb: bool) -> torch.Tensor:
    """BGR uint8 (H, W, 3) images of one size -> normalised (B, 3, H, W)."""
    x = np.stack(images).astype(np.float32)
    if to_rgb:
        x = x[..., ::-1]
    x = (x - mean) / std
    return torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2)


def _grid(n: int, hw: Tuple[int, int]) -> Tuple[int, int]:
    """The (h, w) token grid of ``n`` tokens for an image of ``hw``."""
    h = max(1, round(math.sqrt(n * hw[0] / hw[1])))
    while n % h:
        h -= 1
    return h, n // h


def _mixmim_last_stage(backbone: nn.Module, x: torch.Tensor):
    """MixMIM's last-stage map: its forward ends in a global average
    pool, so the stages run here and the tokens before the pool are kept
    (a stride-32 grid)."""
    tokens, hw = backbone.patch_embed(x)  # (B, N, C)
    tokens = backbone.drop_after_pos(tokens + backbone.absolute_pos_embed)
    for layer in backbone.layers:
        tokens = layer(tokens, attn_mask=None)
    tokens = backbone.norm(tokens)  # (B, h * w, C) of the last stage
    h, w = _grid(tokens.shape[1], hw)
    # (B, h * w, C) -> (B, C, h, w)
    return (tokens.transpose(1, 2).reshape(x.shape[0], -1, h, w),)


def _unmasked_forward(backbone: nn.Module, x: torch.Tensor):
    """The backbone's outputs on every patch of ``x``, no masking.

    mmpretrain's masked-image ViTs mask by default. MAE's stops with
    ``mask=None``; MFF's hands ``mask=None`` on to MAE's forward without
    it (so it masks after all) and MILAN's takes ``importance`` instead:
    every MAE-style ViT runs the plain ViT forward here. MixMIM's pools
    its tokens into one vector: :func:`_mixmim_last_stage`.
    """
    from mmpretrain.models.backbones import (
        MixMIMTransformer,
        VisionTransformer,
    )
    from mmpretrain.models.selfsup import MAEViT

    if isinstance(backbone, MAEViT):
        return VisionTransformer.forward(backbone, x)
    if isinstance(backbone, MixMIMTransformer):
        return _mixmim_last_stage(backbone, x)
    if 'mask' in inspect.signature(backbone.forward).parameters:
        return backbone(x, mask=None)  # e.g. BEiT's, CAE's ViT
    return backbone(x)


@torch.no_grad()
def dense_features(
    backbone: nn.Module, x: torch.Tensor
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Patch feature maps and CLS tokens of a batch.

    Args:
        backbone (nn.Module): From :func:`build_dense_backbone`.
        x (torch.Tensor): Normalised images (B, 3, H, W).

    Returns:
        tuple: maps (B, C * n_layers, h, w) and CLS (B, C * n_layers), or
        None for a backbone without tokens.
    """
    outs = _unmasked_forward(backbone, x)
    outs = outs if isinstance(outs, (list, tuple)) else (outs,)
    maps, cls = [], []
    for out in outs:
        if isinstance(out, (list, tuple)):
            out = out[0]
        if out.dim() == 4:  # (B, C, h, w)
            maps.append(out)
            continue
        extra = int(getattr(backbone, 'num_extra_tokens', 1))
        patch = out[:, extra:]  # (B, N, C)
        h, w = _grid(patch.shape[1], x.shape[-2:])
        # (B, N, C) -> (B, C, h, w)
        maps.append(patch.transpose(1, 2).reshape(out.shape[0], -1, h, w))
        cls.append(out[:, 0])
    if cls:
        return torch.cat(maps, 1), torch.cat(cls, 1)
    return maps[-1], None
