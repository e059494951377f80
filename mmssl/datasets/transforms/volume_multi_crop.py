"""3D multi-crop and 3D block masking for volumetric pretraining.

The crop, resize, flip and rotation of each view are MONAI's array
transforms (``SpatialCrop``, ``Resize``, ``Flip``, ``Rotate90``); this file
only draws their random parameters, from NumPy's global generator (seeded
per rank and worker by mmengine).
"""

import math
from typing import Sequence, Tuple

import numpy as np
import torch
from mmcv.transforms import BaseTransform

from mmssl.extras import require_3d
from mmssl.registry import TRANSFORMS


def _scale(r: Sequence[float], name: str) -> Tuple[float, float]:
    lo, hi = (float(x) for x in r)
    if not 0 < lo <= hi <= 1:
        raise ValueError(f'{name} must be 0 < low <= high <= 1, got {r!r}.')
    return lo, hi


@TRANSFORMS.register_module()
class MultiCrop3D(BaseTransform):
    """DINO-style multi-crop of one volume (C, D, H, W) into cubes.

    Each view: a random box covering a share of the volume drawn uniformly
    from ``*_scale`` (each side ``share ** (1/3)`` of the volume's side,
    times a log-uniform aspect jitter in ``aspect``), resized to
    ``size ** 3`` (trilinear); then a flip of each axis with
    ``flip_prob``, a rotation by k * 90 degrees in a random axis plane with
    ``rot90_prob``, and an intensity jitter ``x * (1 + a) + b`` with
    ``a, b`` uniform in ``+-intensity_scale`` / ``+-intensity_shift`` with
    ``intensity_prob``. With ``normalize=True`` each view is then z-scored
    per channel (its own mean and standard deviation, the view-wise
    version of MONAI's ``NormalizeIntensityd``), so no view carries its
    volume's brightness or contrast, and the affine jitter cancels out.

    Writes ``results['img']``: a list of ``num_global`` tensors
    (C, G, G, G) followed by ``num_local`` tensors (C, L, L, L).

    Args:
        global_size (int): Side of the global crops. Defaults to 96.
        local_size (int): Side of the local crops. Defaults to 48.
        num_global (int): Defaults to 2.
        num_local (int): Defaults to 4.
        global_scale (tuple): Volume share of a global crop.
            Defaults to (0.4, 1.0).
        local_scale (tuple): Volume share of a local crop.
            Defaults to (0.05, 0.4).
        aspect (tuple): Per-axis side ratio jitter. Defaults to
            (0.8, 1.25).
        flip_prob, rot90_prob, intensity_prob (float): Probabilities.
        intensity_scale, intensity_shift (float): Jitter ranges.
        normalize (bool): Z-score every view per channel at the end.
            Defaults to False.
    """

    def __init__(
        self,
        global_size: int = 96,
        local_size: int = 48,
        num_global: int = 2,
        num_local: int = 4,
        global_scale: Sequence[float] = (0.4, 1.0),
        local_scale: Sequence[float] = (0.05, 0.4),
        aspect: Sequence[float] = (0.8, 1.25),
        flip_prob: float = 0.5,
        rot90_prob: float = 0.5,
        intensity_prob: float = 0.8,
        intensity_scale: float = 0.1,
        intensity_shift: float = 0.1,
        normalize: bool = False,
    ) -> None:
        require_3d('MultiCrop3D')
        if num_global < 1 or num_local < 0:
            raise ValueError('num_global must be >= 1 and num_local >= 0.')
        self.num_global = num_global
        self.sizes = [int(global_size)] * num_global
        self.sizes += [int(local_size)] * num_local
        self.scales = [_scale(global_scale, 'global_scale')] * num_global
        self.scales += [_scale(local_scale, 'local_scale')] * num_local
        self.log_aspect = tuple(math.log(float(a)) for a in aspect)
        self.flip_prob = flip_prob
        self.rot90_prob = rot90_prob
        self.intensity_prob = intensity_prob
        self.intensity_scale = intensity_scale
        self.intensity_shift = intensity_shift
        self.normalize = bool(normalize)

    def _box(self, shape: Sequence[int], scale: Tuple[float, float]):
        share = np.random.uniform(*scale)
        jitter = np.exp(np.random.uniform(*self.log_aspect, size=3))
        jitter /= np.prod(jitter) ** (1 / 3)  # keeps the volume share
        start, end = [], []
        for side, j in zip(shape, jitter):
            n = int(round(side * share ** (1 / 3) * j))
            n = min(max(n, 1), side)
            s = np.random.randint(0, side - n + 1)
            start.append(s)
            end.append(s + n)
        return start, end

    def _view(self, img: torch.Tensor, size: int, scale) -> torch.Tensor:
        from monai.transforms import Flip, Resize, Rotate90, SpatialCrop

        start, end = self._box(img.shape[1:], scale)
        out = SpatialCrop(roi_start=start, roi_end=end)(img)
        out = Resize((size,) * 3, mode='trilinear')(out)
        axes = [a for a in range(3) if np.random.rand() < self.flip_prob]
        if axes:
            out = Flip(spatial_axis=axes)(out)
        if np.random.rand() < self.rot90_prob:
            plane = [(0, 1), (0, 2), (1, 2)][np.random.randint(3)]
            k = np.random.randint(1, 4)
            out = Rotate90(k=k, spatial_axes=plane)(out)
        if hasattr(out, 'as_tensor'):  # MetaTensor -> plain tensor
            out = out.as_tensor()
        out = torch.as_tensor(out).float().contiguous()
        if np.random.rand() < self.intensity_prob:
            a = np.random.uniform(-self.intensity_scale, self.intensity_scale)
            b = np.random.uniform(-self.intensity_shift, self.intensity_shift)
            out = out * (1.0 + a) + b
        if self.normalize:  # per channel, over the voxels of this view
            flat = out.flatten(1)
            mean = flat.mean(1).view(-1, 1, 1, 1)
            std = flat.std(1, unbiased=False).view(-1, 1, 1, 1)
            out = (out - mean) / std.clamp(min=1e-8)
        return out

    def transform(self, results: dict) -> dict:
        img = results['img']
        if img.ndim != 4:
            raise ValueError(
                f'MultiCrop3D expects (C, D, H, W), got {tuple(img.shape)}.'
            )
        results['img'] = [
            self._view(img, size, scale)
            for size, scale in zip(self.sizes, self.scales)
        ]
        results['num_global_crops'] = self.num_global
        return results


def blockwise_mask_3d(
    grid: Tuple[int, int, int],
    num_masking_patches: int,
    min_num_patches: int = 8,
    aspect: Tuple[float, float] = (0.5, 2.0),
    max_tries: int = 10,
) -> np.ndarray:
    """Mask about ``num_masking_patches`` cells of a 3D grid with boxes.

    BEiT's block rule in 3D: add random boxes (volume in
    ``[min_num_patches, remaining]``, two log-uniform aspect ratios) that
    add at least one and at most ``remaining`` new cells, until the target
    is met or ``max_tries`` boxes in a row fail. Never exceeds the target.

    Returns:
        np.ndarray: bool (d, h, w) mask.
    """
    d, h, w = grid
    mask = np.zeros(grid, dtype=bool)
    target = int(min(num_masking_patches, d * h * w))
    log_aspect = (math.log(aspect[0]), math.log(aspect[1]))
    count = 0
    while count < target:
        remaining = target - count
        added = 0
        for _ in range(max_tries):
            vol = np.random.uniform(
                min_num_patches, max(remaining, min_num_patches)
            )
            r1, r2 = np.exp(np.random.uniform(*log_aspect, size=2))
            side = vol ** (1 / 3)
            bd = int(round(side * r1))
            bh = int(round(side * r2))
            bw = int(round(vol / max(bd * bh, 1)))
            if not (0 < bd <= d and 0 < bh <= h and 0 < bw <= w):
                continue
            z = np.random.randint(0, d - bd + 1)
            y = np.random.randint(0, h - bh + 1)
            x = np.random.randint(0, w - bw + 1)
            block = mask[z : z + bd, y : y + bh, x : x + bw]
            new = block.size - int(block.sum())
            if 0 < new <= remaining:
                block[...] = True
                added = new
                break
        if added == 0:
            break
        count += added
    return mask


@TRANSFORMS.register_module()
class BlockwiseMaskGenerator3D(BaseTransform):
    """3D block masks for the global crops (iBOT / masked-volume modelling).

    For each of the ``G`` global crops (``results['num_global_crops']``,
    set by :class:`MultiCrop3D`, else every volume in ``results['img']``),
    with probability ``mask_prob`` a ratio ``r ~ U(mask_ratio)`` is drawn
    and about ``r * d * h * w`` patches are masked in boxes
    (:func:`blockwise_mask_3d`); the others get an all-False mask.

    Added keys: ``mask``: np.bool_ array (G, d, h, w), the patch grid of
    a global crop; ``PackInputs`` puts it in ``data_sample.mask``.

    Args:
        patch_size (int): Patch side of the backbone. Defaults to 16.
        mask_ratio (tuple): Masked share range. Defaults to (0.1, 0.5).
        mask_prob (float): Share of global crops masked. Defaults to 0.5.
        min_num_patches (int): Smallest box volume. Defaults to 8.
    """

    def __init__(
        self,
        patch_size: int = 16,
        mask_ratio: Sequence[float] = (0.1, 0.5),
        mask_prob: float = 0.5,
        min_num_patches: int = 8,
    ) -> None:
        lo, hi = (float(r) for r in mask_ratio)
        if not 0 <= lo <= hi <= 1:
            raise ValueError(f'mask_ratio must be in [0, 1], got {mask_ratio}')
        if not 0.0 <= mask_prob <= 1.0:
            raise ValueError(f'mask_prob must be in [0, 1], got {mask_prob}.')
        self.patch_size = int(patch_size)
        self.mask_ratio = (lo, hi)
        self.mask_prob = float(mask_prob)
        self.min_num_patches = int(min_num_patches)

    def transform(self, results: dict) -> dict:
        views = results['img']
        views = views if isinstance(views, list) else [views]
        num_global = int(results.get('num_global_crops', len(views)))
        shape = tuple(views[0].shape[1:])
        grid = tuple(s // self.patch_size for s in shape)
        if min(grid) == 0:
            raise ValueError(
                f'Global crops of {shape} are smaller than one '
                f'{self.patch_size}-voxel patch.'
            )
        masks = np.zeros((num_global, *grid), dtype=bool)
        for i in range(num_global):
            if tuple(views[i].shape[1:]) != shape:
                raise ValueError(
                    f'Global crops must share one size, got {shape} and '
                    f'{tuple(views[i].shape[1:])}.'
                )
            if np.random.rand() < self.mask_prob:
                ratio = np.random.uniform(*self.mask_ratio)
                masks[i] = blockwise_mask_3d(
                    grid, int(ratio * np.prod(grid)), self.min_num_patches
                )
        results['mask'] = masks
        return results
