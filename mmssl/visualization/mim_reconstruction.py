"""Reconstruction pictures of masked-image-modelling algorithms.

Supports MAE-style models (He et al., "Masked Autoencoders Are Scalable
Vision Learners", https://arxiv.org/abs/2111.06377: a backbone with
``random_masking``, a decoder neck taking ``(latent, ids_restore)`` and a
head with ``patchify``/``unpatchify`` and optional ``norm_pix`` targets)
and SimMIM-style models (Xie et al., "SimMIM: A Simple Framework for
Masked Image Modeling", https://arxiv.org/abs/2111.09886: a backbone
taking ``(x, mask)`` and a neck decoding full-size pixels).
"""

import numpy as np
import torch
from torch import nn


def _patch_size_of(backbone: nn.Module) -> int:
    pe = getattr(backbone, 'patch_embed', None)
    for obj in (pe, getattr(pe, 'projection', None)):
        size = getattr(obj, 'patch_size', None) or getattr(
            obj, 'kernel_size', None
        )
        if size is not None:
            return int(size[0] if isinstance(size, (tuple, list)) else size)
    raise ValueError(f'Cannot find the patch size of {type(backbone)}.')


def mim_style(model: nn.Module) -> str:
    """``'mae'`` or ``'simmim'``; raises ``TypeError`` for other models."""
    backbone = getattr(model, 'backbone', None)
    head = getattr(model, 'head', None)
    if (
        backbone is not None
        and hasattr(backbone, 'random_masking')
        and hasattr(head, 'unpatchify')
    ):
        return 'mae'
    if (
        backbone is not None
        and hasattr(backbone, 'mask_token')
        and getattr(model, 'neck', None) is not None
    ):
        return 'simmim'
    raise TypeError(
        f'{type(model).__name__} is not an MAE- or SimMIM-style algorithm '
        '(needs backbone.random_masking + head.unpatchify, or '
        'backbone.mask_token + a pixel decoder neck).'
    )


def _patchify(x: torch.Tensor, p: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, L, p * p * C), MAE's patch order."""
    b, c, h, w = x.shape
    x = x.reshape(b, c, h // p, p, w // p, p)
    x = torch.einsum('nchpwq->nhwpqc', x)
    return x.reshape(b, (h // p) * (w // p), p * p * c)


def _unpatchify(x: torch.Tensor, p: int, c: int, hw: tuple) -> torch.Tensor:
    """(B, L, p * p * C) -> (B, C, H, W)."""
    b = x.shape[0]
    h, w = hw
    x = x.reshape(b, h, w, p, p, c)
    x = torch.einsum('nhwpqc->nchpwq', x)
    return x.reshape(b, c, h * p, w * p)


def simmim_random_mask(
    grid: int, mask_patch: int, mask_ratio: float, rng: np.random.Generator
) -> torch.Tensor:
    """SimMIM's mask: random ``mask_patch``-sized squares, in model patches.

    Args:
        grid (int): Model patches per side (``img_size // patch_size``).
        mask_patch (int): Side of a masked square, in model patches.
        mask_ratio (float): Fraction of squares masked.
        rng (np.random.Generator): Random generator.

    Returns:
        torch.Tensor: (grid, grid) with 1 for masked patches.
    """
    if grid % mask_patch:
        raise ValueError(
            f'The mask square ({mask_patch} patches) must '
            f'divide the patch grid ({grid}).'
        )
    side = grid // mask_patch
    n = side * side
    mask = np.zeros(n, dtype=np.float32)
    mask[rng.permutation(n)[: int(np.ceil(n * mask_ratio))]] = 1
    mask = mask.reshape(side, side).repeat(mask_patch, 0).repeat(mask_patch, 1)
    return torch.from_numpy(mask)


@torch.no_grad()
def mim_reconstruct(
    model: nn.Module,
    inputs: torch.Tensor,
    mask_ratio: float | None = None,
    seed: int = 0,
    mask_patch_size: int | None = None,
) -> dict:
    """Reconstruct a normalised image batch with a random mask.

    Args:
        model (nn.Module): MAE- or SimMIM-style algorithm, in eval mode.
        inputs (torch.Tensor): Normalised images, (B, 3, H, W).
        mask_ratio (float, optional): Fraction of patches to mask; the
            backbone's own ratio (MAE) or 0.6 (SimMIM) when None.
        seed (int): Seed of the mask. Defaults to 0.
        mask_patch_size (int, optional): SimMIM mask square side in pixels;
            defaults to a quarter of the image side (rounded to patches).

    Returns:
        dict: ``original``, ``masked``, ``reconstruction`` and ``pasted``
        (the reconstruction with the visible patches of the original),
        each (B, 3, H, W) in the normalised space, and ``mask`` (B, 1, H,
        W) with 1 where the input was hidden.
    """
    style = mim_style(model)
    backbone = model.backbone
    p = _patch_size_of(backbone)
    b, c, h, w = inputs.shape
    if style == 'mae':
        if mask_ratio is not None:
            backbone.mask_ratio = mask_ratio
        torch.manual_seed(seed)
        latent, mask, ids_restore = backbone(inputs)  # mask: (B, L)
        pred = model.neck(latent, ids_restore)  # (B, L, p * p * C)
        if isinstance(pred, (tuple, list)):
            pred = pred[0]
        if getattr(model.head, 'norm_pix', False):
            # targets were (patch - mean) / std of each original patch
            target = _patchify(inputs, p)
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            pred = pred * (var + 1.0e-6) ** 0.5 + mean
        rec = _unpatchify(pred, p, c, (h // p, w // p))
        pix_mask = _unpatchify(
            mask.unsqueeze(-1).expand(-1, -1, p * p * c),
            p,
            c,
            (h // p, w // p),
        )[:, :1]
    else:
        ratio = 0.6 if mask_ratio is None else mask_ratio
        grid = h // p
        if mask_patch_size is None:
            mask_patches = max(1, grid // 4)
            while grid % mask_patches:
                mask_patches -= 1
        else:
            mask_patches = max(1, mask_patch_size // p)
        rng = np.random.default_rng(seed)
        mask = torch.stack(
            [
                simmim_random_mask(grid, mask_patches, ratio, rng)
                for _ in range(b)
            ]
        ).to(inputs.device)  # (B, grid, grid)
        latent = backbone(inputs, mask)
        rec = model.neck(latent[0])  # (B, C, H, W)
        pix_mask = (
            mask.repeat_interleave(p, 1)
            .repeat_interleave(p, 2)
            .unsqueeze(1)
            .float()
        )
    masked = inputs * (1 - pix_mask)
    pasted = masked + rec * pix_mask
    return dict(
        original=inputs,
        masked=masked,
        reconstruction=rec,
        pasted=pasted,
        mask=pix_mask,
    )


def to_uint8_rgb(
    x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, is_rgb: bool = True
) -> np.ndarray:
    """Undo the data preprocessor's normalisation: (3, H, W) -> HxWx3."""
    img = (
        x.detach().cpu().float() * std.cpu().view(-1, 1, 1)
        + mean.cpu().view(-1, 1, 1)
    ).clamp(0, 255)
    img = img.permute(1, 2, 0).numpy().astype(np.uint8)
    return img if is_rgb else img[..., ::-1].copy()


def save_panels(
    panels: list[tuple[str, np.ndarray]],
    out_file: str,
    panel_inches: float = 2.5,
    dpi: int = 100,
    title: str = '',
) -> None:
    """Save images side by side with a caption each, as one PNG."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    n = len(panels)
    fig, axes = plt.subplots(
        1, n, figsize=(panel_inches * n, panel_inches + 0.4), dpi=dpi
    )
    axes = np.atleast_1d(axes)
    for ax, (name, img) in zip(axes, panels):
        ax.imshow(
            img,
            interpolation='nearest',
            cmap='gray' if img.ndim == 2 else None,
        )
        ax.set_title(name, fontsize=9)
        ax.axis('off')
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out_file, dpi=dpi)
    plt.close(fig)
