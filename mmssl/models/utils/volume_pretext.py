"""The pretext augmentations of SwinUNETR pretraining, on batches.

Tang et al., 2022, `Self-Supervised Pre-Training of Swin Transformers for
3D Medical Image Analysis <https://arxiv.org/abs/2111.14791>`_, Sec. 3.2:
each sub-volume is rotated by 0, 90, 180 or 270 degrees about the z axis
(the label of the rotation task), and random boxes of it are replaced by
noise (the input of the inpainting task).

Both run on the collated batch (B, C, *spatial) with torch's global
generators (seeded by mmengine, saved in checkpoints); the cutout boxes
are drawn on the CPU and the masks moved to the batch's device.
"""

from typing import Sequence, Tuple

import torch


def _plane_dims(x: torch.Tensor, plane: Sequence[int]) -> Tuple[int, int]:
    """Tensor dims of two spatial axes of ``x`` (B, C, *spatial)."""
    spatial = x.dim() - 2
    if len(plane) != 2 or any(not 0 <= a < spatial for a in plane):
        raise ValueError(
            f'plane must be two spatial axes in [0, {spatial - 1}], got '
            f'{tuple(plane)}.'
        )
    a, b = (int(p) + 2 for p in plane)
    if a == b:
        raise ValueError(f'plane needs two different axes, got {plane}.')
    if x.shape[a] != x.shape[b]:
        raise ValueError(
            f'Rotating by 90 degrees in the plane of axes {tuple(plane)} '
            f'needs equal sides there, got {x.shape[a]} and {x.shape[b]} '
            f'(input {tuple(x.shape)}); crop cubes or pick another plane.'
        )
    return a, b


def rotate_volumes(
    x: torch.Tensor, k: torch.Tensor, plane: Sequence[int] = (0, 1)
) -> torch.Tensor:
    """Rotate sample ``i`` of ``x`` by ``k[i] * 90`` degrees.

    Args:
        x (torch.Tensor): (B, C, *spatial) volumes.
        k (torch.Tensor): (B,) quarter turns, any integers.
        plane (Sequence[int]): The two spatial axes spanning the rotation
            plane, counted from 0 (``torch.rot90`` turns from the first
            towards the second). (0, 1) is the axial plane of a volume in
            MONAI's (C, x, y, z) layout, i.e. a rotation about z.

    Returns:
        torch.Tensor: The rotated volumes, same shape as ``x``.
    """
    dims = _plane_dims(x, plane)
    if k.shape != (x.shape[0],):
        raise ValueError(f'k must be ({x.shape[0]},), got {tuple(k.shape)}.')
    out = x.clone()
    k = k.to(x.device) % 4
    for turns in range(1, 4):
        rows = (k == turns).nonzero()[:, 0]
        if rows.numel():
            out[rows] = torch.rot90(x[rows], turns, dims)
    return out


def random_rotations(
    x: torch.Tensor, num_classes: int = 4, plane: Sequence[int] = (0, 1)
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Rotate each sample by a random multiple of 90 degrees.

    Args:
        x (torch.Tensor): (B, C, *spatial) volumes.
        num_classes (int): Rotations to draw from: 0 to ``num_classes - 1``
            quarter turns (4 in the paper, 2 for 0/180 only).
        plane (Sequence[int]): See :func:`rotate_volumes`.

    Returns:
        tuple: The rotated volumes and the (B,) int64 labels (quarter
        turns).
    """
    if not 2 <= num_classes <= 4:
        raise ValueError(
            f'num_classes must be 2, 3 or 4 rotations, got {num_classes}.'
        )
    labels = torch.randint(num_classes, (x.shape[0],), device=x.device)
    return rotate_volumes(x, labels, plane), labels


def _side_range(side: int, block_size: Tuple[float, float]) -> Tuple[int, int]:
    lo = max(1, int(round(block_size[0] * side)))
    hi = max(lo, int(round(block_size[1] * side)))
    return lo, hi


def cutout_mask(
    shape: Sequence[int],
    mask_ratio: float,
    block_size: Sequence[float] = (0.05, 0.25),
    device=None,
) -> torch.Tensor:
    """A random union of boxes covering at least ``mask_ratio`` of a
    volume.

    Boxes with each side drawn uniformly in ``block_size`` (shares of the
    volume's side, at least one voxel) are placed uniformly at random
    until the union covers ``mask_ratio`` of the voxels.

    Args:
        shape (Sequence[int]): Spatial shape (D, H, W).
        mask_ratio (float): Share of voxels to cover, in [0, 1).
        block_size (Sequence[float]): (low, high) side share of a box.
        device: Device of the mask.

    Returns:
        torch.Tensor: Bool mask of ``shape``, True = cut out.
    """
    if not 0.0 <= mask_ratio < 1.0:
        raise ValueError(f'mask_ratio must be in [0, 1), got {mask_ratio}.')
    lo, hi = (float(b) for b in block_size)
    if not 0.0 < lo <= hi <= 1.0:
        raise ValueError(
            f'block_size must be 0 < low <= high <= 1, got {block_size}.'
        )
    mask = torch.zeros(tuple(shape), dtype=torch.bool, device=device)
    need = mask_ratio * mask.numel()
    ranges = [_side_range(s, (lo, hi)) for s in shape]
    while mask.count_nonzero().item() < need:
        box = []
        for s, (a, b) in zip(shape, ranges):
            size = int(torch.randint(a, b + 1, ()).item())
            start = int(torch.randint(0, s - size + 1, ()).item())
            box.append(slice(start, start + size))
        mask[tuple(box)] = True
    return mask


def cutout_volumes(
    x: torch.Tensor,
    mask_ratio: float,
    block_size: Sequence[float] = (0.05, 0.25),
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Replace random boxes of each sample by uniform noise.

    Each sample gets its own :func:`cutout_mask` (shared by its
    channels); the cut voxels are drawn uniformly between the sample's
    minimum and maximum, so the noise has the volume's range.

    Args:
        x (torch.Tensor): (B, C, *spatial) volumes.
        mask_ratio (float): Share of voxels cut out per sample.
        block_size (Sequence[float]): See :func:`cutout_mask`.

    Returns:
        tuple: The cut volumes (a new tensor) and the (B, 1, *spatial) bool
        masks, True = replaced by noise.
    """
    out = x.clone()
    masks = []
    for i in range(x.shape[0]):
        # drawn on the CPU (no device sync per box), then moved
        mask = cutout_mask(x.shape[2:], mask_ratio, block_size).to(x.device)
        lo, hi = x[i].min(), x[i].max()
        noise = torch.rand_like(x[i]) * (hi - lo) + lo
        out[i] = torch.where(mask, noise, x[i])
        masks.append(mask)
    return out, torch.stack(masks)[:, None]


__all__ = [
    'cutout_mask',
    'cutout_volumes',
    'random_rotations',
    'rotate_volumes',
]
