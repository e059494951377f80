"""Plumbing of the DINO family: teacher copies, views, masks, features.

Pure functions used by :class:`~mmssl.models.algorithms.DINOFamily`, kept
apart so that its training step reads in one screen.
"""

import math
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from mmssl.models.utils.precision import at_least_fp32
from mmssl.registry import MODELS


def strip_for_teacher(module: nn.Module) -> nn.Module:
    """Teacher copy: no gradients, no stochastic depth / dropout, no
    activation checkpointing, no pretrained re-initialisation.

    mmssl's own blocks (``DINOBlock``) need nothing here: their stochastic
    depth acts only while autograd records, and the teacher runs under
    ``torch.no_grad``."""
    for m in module.modules():
        if hasattr(m, 'drop_prob'):  # DropPath (mmcv, timm)
            m.drop_prob = 0.0
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if hasattr(m, 'with_cp'):
            m.with_cp = False
        if isinstance(m, BaseModule):
            m.init_cfg = None
    for p in module.parameters():
        p.requires_grad_(False)
    return module


def forward_backbone(
    backbone: nn.Module, x: Tensor, mask: Optional[Tensor] = None
) -> Tuple[Tensor, Optional[Tensor]]:
    """Run a backbone; return CLS (B, C) and patch tokens (B, N, C).

    Understood outputs: ViT tokens (B, 1 + R + N, C) (CLS first, then
    ``backbone.num_extra_tokens - 1`` registers, then patches), CLS
    features (B, C), or CNN maps (B, C, H, W) (global average pooled).
    """
    out = backbone(x) if mask is None else backbone(x, mask=mask)
    return cls_and_patches(backbone, out)


def forward_groups(
    backbone: nn.Module,
    xs: Sequence[Tensor],
    masks: Optional[Sequence[Optional[Tensor]]] = None,
    packed: bool = False,
) -> List[Tuple[Tensor, Optional[Tensor]]]:
    """CLS and patch tokens of each group of same-size crops.

    Args:
        backbone (nn.Module): The backbone.
        xs (Sequence[Tensor]): Groups of crops (B_g, 3, H_g, W_g).
        masks (Sequence, optional): Per group, a patch mask or None.
        packed (bool): One ``backbone.forward_packed`` pass over all groups
            (token-wise layers run once on the concatenated tokens) instead
            of one ``forward`` per group. Same values.

    Returns:
        list[tuple]: Per group, what :func:`forward_backbone` returns.
    """
    masks = [None] * len(xs) if masks is None else masks
    if not packed:
        return [forward_backbone(backbone, x, m) for x, m in zip(xs, masks)]
    outs = backbone.forward_packed(list(xs), list(masks))
    return [cls_and_patches(backbone, out) for out in outs]


def cls_and_patches(
    backbone: nn.Module, out
) -> Tuple[Tensor, Optional[Tensor]]:
    """CLS (B, C) and patch tokens (B, N, C) (or None) of a backbone
    output, as described in :func:`forward_backbone`."""
    if isinstance(out, (list, tuple)):
        out = out[-1]
    if out.dim() == 4:  # CNN feature map
        return out.mean(dim=(2, 3)), None
    if out.dim() == 2:  # CLS feature
        return out, None
    if out.dim() == 3:  # tokens: CLS, registers, patches
        num_extra = getattr(backbone, 'num_extra_tokens', 1)
        return out[:, 0], out[:, num_extra:]
    raise ValueError(f'Unsupported backbone output {tuple(out.shape)}.')


def split_views(
    inputs: List[Tensor], num_global: int, num_gram: int = 0
) -> Tuple[Tensor, List[Tensor], Optional[Tensor]]:
    """Split the views of a batch.

    Args:
        inputs (list[Tensor]): Views (B, 3, h, w): ``num_global`` global
            crops, then local crops, then ``num_gram`` high-resolution
            copies of the global crops for the Gram teacher.
        num_global (int): G.
        num_gram (int): 0 or G.

    Returns:
        tuple: Global crops (G*B, 3, H, W); local crops, one (n*B, 3, h, w)
        tensor per run of same-size views; Gram crops (G*B, 3, H', W') or
        None.
    """
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(
            'DINO-style training needs a list of views '
            '(use the MultiCrop transform).'
        )
    if len(inputs) - num_gram < max(num_global, 2):
        raise ValueError(
            f'Got {len(inputs)} views but num_global_crops={num_global} '
            f'(and {num_gram} Gram crops); DINO needs the G global crops '
            'first and at least 2 views.'
        )
    gram_x = torch.cat(list(inputs[-num_gram:])) if num_gram else None
    local = inputs[num_global : len(inputs) - num_gram]
    groups: List[List[Tensor]] = []
    for view in local:  # same-size local crops go together
        if groups and groups[-1][0].shape == view.shape:
            groups[-1].append(view)
        else:
            groups.append([view])
    global_x = torch.cat(list(inputs[:num_global]))  # (G*B, 3, H, W)
    return global_x, [torch.cat(g) for g in groups], gram_x


def global_masks(
    data_samples: Sequence[DataSample], num_global: int, device
) -> Tensor:
    """(G*B, Hp*Wp) bool masks in the order of the concatenated crops."""
    if not data_samples or 'mask' not in data_samples[0]:
        raise ValueError(
            'The ibot_patch term needs patch masks in data_sample.mask: add '
            'BlockwiseMaskGenerator after MultiCrop in the pipeline (or the '
            'block_mask_collate collate function).'
        )
    masks = torch.stack([torch.as_tensor(s.mask) for s in data_samples])
    masks = masks.to(device)  # numpy masks from the pipeline too
    # (B, G, Hp, Wp) or already flat (B, G, Hp*Wp)
    batch, num_g = masks.shape[:2]
    if num_g != num_global:
        raise ValueError(
            f'data_sample.mask has {num_g} crops per image, expected '
            f'num_global_crops={num_global}.'
        )
    # (B, G, ...) -> (G, B, ...) -> (G*B, P): crop-major like the inputs
    return masks.transpose(0, 1).reshape(num_g * batch, -1).bool()


#: ``data_sample`` metainfo key: an upper bound of the number of masked
#: patches of the whole batch the sample was collated in (set by
#: ``block_mask_collate``). With it the masked patches go through a buffer
#: of that fixed size (static shapes); without it, ``tokens[masks]``.
MASK_BOUND_KEY = 'num_masked_max'


def mask_buffer_size(data_samples: Sequence[DataSample]) -> Optional[int]:
    """The batch's masked-patch bound (``MASK_BOUND_KEY``), or None."""
    if not data_samples:
        return None
    bound = data_samples[0].metainfo.get(MASK_BOUND_KEY)
    return None if bound is None else int(bound)


def mask_buffer_index(masks: Tensor, size: int) -> Tensor:
    """Flat positions (U,) of a fixed-size buffer of masked patches.

    The DINOv2 reference (Oquab et al. 2023,
    https://arxiv.org/abs/2304.07193) gathers the masked patch tokens
    into a buffer whose length is an upper bound fixed per batch size, so
    the heads see the same shape every step. Here the positions are found
    on the device without asking the host for the count: a stable sort
    puts the masked positions first, in ``tokens[masks]`` order, then
    unmasked positions as padding (their loss weight is 0).

    Args:
        masks (Tensor): (G*B, P) bool masks.
        size (int): U, at least ``masks.sum()`` (masked patches beyond U
            would be dropped); capped at ``masks.numel()``.

    Returns:
        Tensor: (U,) long positions into ``masks.flatten()``.
    """
    flat = masks.flatten().to(torch.uint8)
    order = torch.sort(flat, descending=True, stable=True).indices
    return order[: min(size, flat.numel())]


def masked_tokens(
    patches: Optional[Tensor],
    masks: Optional[Tensor],
    index: Optional[Tensor] = None,
) -> Optional[Tensor]:
    """Patch tokens (M, C) at the masked positions; None without masks.

    With ``index`` (:func:`mask_buffer_index`) the (U, C) rows of the
    fixed-size buffer instead (a gather: static shape, no host sync).
    Raises clear errors when the backbone gives no or too few / many
    patch tokens for the masks (G*B, P).
    """
    if masks is None:
        return None
    if patches is None:
        raise ValueError(
            'Patch terms need patch tokens: build the backbone with out_type'
            "='raw'."
        )
    if patches.shape[1] != masks.shape[1]:
        raise ValueError(
            f'The masks have {masks.shape[1]} patches per crop but the '
            f'backbone gives {patches.shape[1]} patch tokens: set the mask '
            'generator input_size to global crop size // patch size.'
        )
    if index is not None:
        return patches.flatten(0, 1).index_select(0, index)  # (U, C)
    return patches[masks]


def patch_grid(x: Tensor, num_patches: int) -> Tuple[int, int]:
    """Patch grid (h, w) of images ``x`` (..., H, W) cut into N patches."""
    height, width = x.shape[-2:]
    p = max(1, round(math.sqrt(height * width / num_patches)))
    if (height // p) * (width // p) != num_patches:
        raise ValueError(
            f'{num_patches} patch tokens do not tile a {height}x{width} '
            'image with square patches.'
        )
    return height // p, width // p


def resize_patch_grid(
    patches: Tensor, src_hw: Tuple[int, int], dst_hw: Tuple[int, int]
) -> Tensor:
    """Resize patch features (B, h*w, C) on their grid, bicubic.

    Used to bring the Gram teacher's features of a high-resolution crop to
    the student's patch grid (DINOv3, Simeoni et al. 2025,
    https://arxiv.org/abs/2508.10104).
    """
    if tuple(src_hw) == tuple(dst_hw):
        return patches
    b, n, c = patches.shape
    if n != src_hw[0] * src_hw[1]:
        raise ValueError(f'{n} patch tokens do not form a {src_hw} grid.')
    grid = patches.transpose(1, 2).reshape(b, c, *src_hw)  # (B, C, h, w)
    grid = F.interpolate(
        at_least_fp32(grid),  # float64 stays float64
        size=tuple(dst_hw),
        mode='bicubic',
        align_corners=False,
    )
    return grid.flatten(2).transpose(1, 2)  # (B, h'*w', C)


#: term name -> attribute holding its criterion (the checkpoint keys).
TERM_ATTRS = dict(
    dino_cls='dino_loss',
    ibot_patch='ibot_loss',
    koleo='koleo_loss',
    gram='gram_loss',
)


def build_terms(
    model: nn.Module,
    terms: Dict[str, dict],
    weight_keys: Dict[str, str],
    loss_weights: Optional[dict],
) -> Dict[str, float]:
    """Build each term's criterion as ``model.<TERM_ATTRS[name]>``.

    Returns:
        dict: ``loss_weights``: each term's ``weight`` (default 1.0) under
        its key in ``weight_keys``, updated by ``loss_weights``, which may
        also hold ``dino_local`` (the local-crop factor of the DINO CE).
    """
    if set(terms) - set(TERM_ATTRS) or 'dino_cls' not in terms:
        raise ValueError(
            f'terms must include dino_cls and be among {list(TERM_ATTRS)}, '
            f'got {sorted(terms)}.'
        )
    weights = {}
    for name, cfg in terms.items():
        cfg = dict(cfg)
        weights[weight_keys[name]] = cfg.pop('weight', 1.0)
        setattr(model, TERM_ATTRS[name], MODELS.build(cfg))
    extra = set(loss_weights or {}) - set(weights) - {'dino_local'}
    if extra:
        raise ValueError(
            f'Unknown loss_weights keys {sorted(extra)}; '
            f'{type(model).__name__} has {sorted(weights)}.'
        )
    weights.update(loss_weights or {})
    return weights
