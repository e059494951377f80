"""Masked autoencoders on volumes (MAE in 3D)."""

from typing import Dict, List, Tuple

import torch
from mmpretrain.models.selfsup.base import BaseSelfSupervisor

from mmssl.registry import MODELS


def patchify_3d(x: torch.Tensor, patch: Tuple[int, int, int]) -> torch.Tensor:
    """Cut volumes into flattened patches in the token order of
    the 3D ``PatchEmbed`` (d, h, w row-major).

    Args:
        x (torch.Tensor): (B, C, D, H, W), sides multiples of ``patch``.
        patch (tuple): Patch size per axis (pd, ph, pw).

    Returns:
        torch.Tensor: (B, N, pd * ph * pw * C), voxels of a patch in
        (pd, ph, pw, C) order.
    """
    B, C, D, H, W = x.shape
    pd, ph, pw = patch
    if D % pd or H % ph or W % pw:
        raise ValueError(f'{tuple(x.shape)} is not a multiple of {patch}.')
    x = x.reshape(B, C, D // pd, pd, H // ph, ph, W // pw, pw)
    # (B, C, d, pd, h, ph, w, pw) -> (B, d, h, w, pd, ph, pw, C)
    x = x.permute(0, 2, 4, 6, 3, 5, 7, 1)
    return x.reshape(B, (D // pd) * (H // ph) * (W // pw), -1)


def random_masking(
    batch: int, num_patches: int, mask_ratio: float, device=None
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """MAE's per-sample random masking by sorting uniform noise.

    Returns:
        tuple: ``keep`` (B, K) indices of the visible patches in ascending
        noise order, ``mask`` (B, N) float, 1 = masked, and ``restore``
        (B, N), the permutation putting [visible, masked] back in place.
    """
    num_keep = max(1, int(round(num_patches * (1 - mask_ratio))))
    noise = torch.rand(batch, num_patches, device=device)
    shuffle = noise.argsort(dim=1)
    restore = shuffle.argsort(dim=1)
    keep = shuffle[:, :num_keep]
    mask = torch.ones(batch, num_patches, device=device)
    mask[:, :num_keep] = 0
    mask = torch.gather(mask, 1, restore)
    return keep, mask, restore


def masked_mse(
    pred: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    norm_pix: bool = True,
) -> torch.Tensor:
    """Mean squared error of the masked patches only.

    Args:
        pred, target (torch.Tensor): (B, N, P) patches.
        mask (torch.Tensor): (B, N), 1 = masked (counted), 0 = visible.
        norm_pix (bool): Normalise each target patch by its own mean and
            variance (MAE's normalized-pixel target).

    Returns:
        torch.Tensor: Sum over masked patches of the per-patch mean squared
        error, divided by the number of masked patches.
    """
    if norm_pix:
        mean = target.mean(dim=-1, keepdim=True)
        var = target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1e-6) ** 0.5
    per_patch = ((pred - target) ** 2).mean(dim=-1)  # (B, N)
    return (per_patch * mask).sum() / mask.sum().clamp(min=1)


@MODELS.register_module()
class MAE3D(BaseSelfSupervisor):
    """MAE (He et al., 2022, https://arxiv.org/abs/2111.06377) on volumes.

    The encoder is a :class:`VisionTransformer3D`: its patch embedding,
    position embedding and CLS/register tokens (``prepare_tokens``), then
    its blocks on the visible patches only (``1 - mask_ratio`` of them,
    drawn per sample). The neck (:class:`MAEDecoder3D`) fills the masked
    places with a mask token and predicts every patch's voxels; the loss
    is the mean squared error on the masked patches (:func:`masked_mse`).

    Args:
        backbone (dict): A ``VisionTransformer3D``. Its ``out_type`` only
            matters for feature extraction: the demo probes the class token
            (``'cls_token'``), which beat the mean patch token there
            (configs/volumetric/README.md).
        neck (dict): A ``MAEDecoder3D``.
        mask_ratio (float): Share of masked patches. Defaults to 0.75.
        norm_pix (bool): Normalized-voxel targets. Defaults to True.
        **kwargs: ``BaseSelfSupervisor`` arguments.
    """

    def __init__(
        self,
        backbone: dict,
        neck: dict,
        mask_ratio: float = 0.75,
        norm_pix: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, **kwargs)
        if not 0.0 < mask_ratio < 1.0:
            raise ValueError(f'mask_ratio must be in (0, 1), got {mask_ratio}')
        self.mask_ratio = mask_ratio
        self.norm_pix = norm_pix
        # MAE drops the masked patches: the backbone's mask token is unused
        token = getattr(self.backbone, 'mask_token', None)
        if token is not None:
            token.requires_grad_(False)

    def encode_visible(
        self, x: torch.Tensor, keep: torch.Tensor
    ) -> torch.Tensor:
        """Encoder tokens of the kept patches, (B, K, C) (extra tokens
        dropped after the blocks)."""
        bb = self.backbone
        tokens, _ = bb.prepare_tokens(x)  # (B, E + N, C)
        extra = bb.num_extra_tokens
        C = tokens.shape[-1]
        patches = tokens[:, extra:]
        visible = torch.gather(
            patches, 1, keep.unsqueeze(-1).expand(-1, -1, C)
        )  # (B, K, C)
        h = torch.cat([tokens[:, :extra], visible], dim=1)
        for layer in bb.layers:
            h = bb._run_layer(layer, h)
        if bb.final_norm:
            h = bb.ln1(h)
        return h[:, extra:]

    def loss(
        self, inputs: List[torch.Tensor], data_samples
    ) -> Dict[str, torch.Tensor]:
        """Reconstruction loss of one view (B, C, D, H, W)."""
        x = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        patch = tuple(self.backbone.patch_size)
        target = patchify_3d(x, patch)  # (B, N, P)
        B, N = target.shape[:2]
        keep, mask, restore = random_masking(B, N, self.mask_ratio, x.device)
        latent = self.encode_visible(x, keep)
        pred = self.neck(latent, restore)  # (B, N, P)
        return dict(loss=masked_mse(pred, target, mask, self.norm_pix))
