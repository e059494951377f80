"""Self-attention maps and PCA of patch features of ViT backbones.

The pictures of DINO (Caron et al., "Emerging Properties in
Self-Supervised Vision Transformers", https://arxiv.org/abs/2104.14294):
the attention of the CLS token to the patches in the last block, one map
per head; and of DINOv2 (Oquab et al., https://arxiv.org/abs/2304.07193):
the first three principal components of the patch features as RGB.
"""

import numpy as np
import torch
from torch import nn


def _last_block(backbone: nn.Module) -> nn.Module:
    for attr in ('layers', 'blocks'):
        blocks = getattr(backbone, attr, None)
        if (
            isinstance(blocks, (nn.ModuleList, nn.Sequential))
            and len(blocks)
            and hasattr(blocks[-1], 'attn')
        ):
            return blocks[-1]
    raise TypeError(
        f'{type(backbone).__name__} is not a ViT backbone: found no '
        '`layers` or `blocks` list whose blocks have an `attn` module. '
        'Attention maps are drawn for VisionTransformer-like backbones '
        '(mmpretrain VisionTransformer, DINOVisionTransformer).'
    )


def _num_extra_tokens(backbone: nn.Module) -> int:
    n = getattr(backbone, 'num_extra_tokens', None)
    if n is None:
        n = 1 + int(getattr(backbone, 'num_register_tokens', 0) or 0)
    return int(n)


@torch.no_grad()
def last_block_attention(
    backbone: nn.Module, inputs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """CLS-to-all attention of the last block and its output tokens.

    Uses ``backbone.get_last_selfattention(x)`` when the backbone has it;
    otherwise recomputes ``softmax(q k^T / sqrt(d))`` from the output of
    the last block's ``attn.qkv`` linear layer, caught with forward hooks.

    Args:
        backbone (nn.Module): A ViT backbone.
        inputs (torch.Tensor): Normalised images, (B, 3, H, W).

    Returns:
        tuple[torch.Tensor, torch.Tensor]: Attention, (B, heads, N, N),
        and the last block's output tokens, (B, N, C) (N includes the CLS
        and other extra tokens).
    """
    block = _last_block(backbone)
    caught: dict = {}
    handles = [
        block.register_forward_hook(
            lambda m, i, o: caught.__setitem__(
                'tokens', o[0] if isinstance(o, (tuple, list)) else o
            )
        )
    ]
    if hasattr(backbone, 'get_last_selfattention'):
        try:
            attn = backbone.get_last_selfattention(inputs)
            if 'tokens' not in caught:
                backbone(inputs)
        finally:
            for h in handles:
                h.remove()
        return attn, caught['tokens']
    attn_mod = block.attn
    qkv_mod = getattr(attn_mod, 'qkv', None)
    heads = getattr(attn_mod, 'num_heads', None)
    if qkv_mod is None or heads is None:
        for h in handles:
            h.remove()
        raise TypeError(
            f'The last block of {type(backbone).__name__} has no '
            '`attn.qkv` / `attn.num_heads`, and the backbone has no '
            '`get_last_selfattention`; cannot compute attention maps.'
        )
    handles.append(
        qkv_mod.register_forward_hook(
            lambda m, i, o: caught.__setitem__('qkv', o)
        )
    )
    try:
        backbone(inputs)
    finally:
        for h in handles:
            h.remove()
    qkv = caught['qkv']  # (B, N, 3 * C)
    b, n, c3 = qkv.shape
    d = c3 // 3 // heads
    qkv = qkv.reshape(b, n, 3, heads, d).permute(2, 0, 3, 1, 4)
    q, k = qkv[0], qkv[1]  # (B, heads, N, d)
    attn = (q @ k.transpose(-2, -1) * d**-0.5).softmax(dim=-1)
    return attn, caught['tokens']


def cls_attention_maps(
    backbone: nn.Module, inputs: torch.Tensor, grid: tuple[int, int]
) -> np.ndarray:
    """Per-head CLS attention to the patches, (B, heads, h, w)."""
    attn, _ = last_block_attention(backbone, inputs)
    extra = _num_extra_tokens(backbone)
    maps = attn[:, :, 0, extra:]  # (B, heads, h * w)
    if maps.shape[-1] != grid[0] * grid[1]:
        raise ValueError(
            f'Expected {grid[0] * grid[1]} patch tokens, got {maps.shape[-1]}.'
        )
    return maps.reshape(*maps.shape[:2], *grid).float().cpu().numpy()


def patch_pca_rgb(
    tokens: torch.Tensor, grid: tuple[int, int], num_extra_tokens: int = 1
) -> np.ndarray:
    """First 3 principal components of patch tokens as an RGB image.

    Args:
        tokens (torch.Tensor): (N, C) tokens of one image.
        grid (tuple[int, int]): Patch grid (h, w).
        num_extra_tokens (int): Leading non-patch tokens to skip.

    Returns:
        np.ndarray: (h, w, 3) uint8, each component min-max scaled.
    """
    from sklearn.decomposition import PCA

    patches = tokens[num_extra_tokens:].float().cpu().numpy()
    n_comp = min(3, patches.shape[0], patches.shape[1])
    comps = PCA(n_components=n_comp).fit_transform(patches)  # (h * w, 3)
    if n_comp < 3:
        comps = np.pad(comps, ((0, 0), (0, 3 - n_comp)))
    lo, hi = comps.min(0, keepdims=True), comps.max(0, keepdims=True)
    comps = (comps - lo) / np.maximum(hi - lo, 1e-8)
    return (comps.reshape(*grid, 3) * 255).astype(np.uint8)


def heatmap(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A (h, w) map as an upsampled RGB heat map of ``size`` (W, H)."""
    import cv2

    v = values - values.min()
    v = (255 * v / max(v.max(), 1e-12)).astype(np.uint8)
    v = cv2.resize(v, size, interpolation=cv2.INTER_NEAREST)
    return cv2.applyColorMap(v, cv2.COLORMAP_INFERNO)[..., ::-1].copy()
