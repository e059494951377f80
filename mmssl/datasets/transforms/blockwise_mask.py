"""Block-wise patch masks for the global crops of iBOT / DINOv2.

References:
    - Zhou et al. 2021, "iBOT: Image BERT Pre-Training with Online
      Tokenizer", https://arxiv.org/abs/2111.07832
    - Bao et al. 2021, "BEiT: BERT Pre-Training of Image Transformers"
      (block-wise masking), https://arxiv.org/abs/2106.08254
"""

import math
from typing import Optional, Sequence, Tuple

import numpy as np
from mmcv.transforms import BaseTransform

from mmssl.registry import TRANSFORMS

RULES = ('beit', 'dinov2')


def draw_block(
    rng,
    min_area: float,
    max_area: float,
    log_aspect: Tuple[float, float],
) -> Tuple[int, int]:
    """One block attempt: area ``U(min_area, max_area)`` (either order),
    aspect ratio ``exp(U(log_aspect))``; returns its (h, w) in cells."""
    area = rng.uniform(min_area, max_area)
    aspect = math.exp(rng.uniform(*log_aspect))
    return (
        int(round(math.sqrt(area * aspect))),
        int(round(math.sqrt(area / aspect))),
    )


def blockwise_mask(
    grid: Tuple[int, int],
    num_masking_patches: int,
    min_num_patches: int = 4,
    max_num_patches: Optional[int] = None,
    aspect: Tuple[float, float] = (0.3, 1 / 0.3),
    max_tries: int = 10,
    rule: str = 'beit',
    rng=np.random,
) -> np.ndarray:
    """Mask about ``num_masking_patches`` cells of a grid with blocks.

    Add random rectangles that cover at least one and at most
    ``remaining`` new cells (``remaining``: what is left of the target,
    capped by ``max_num_patches``) until the target is met or
    ``max_tries`` attempts in a row fail. The result therefore never
    exceeds the target and may fall a little short of it. Each attempt
    draws a new area and a log-uniform aspect ratio (:func:`draw_block`).

    ``rule='beit'`` (the earlier mmssl rule): area in
    ``[min_num_patches, max(remaining, min_num_patches)]``, blocks up to the
    whole grid. ``rule='dinov2'`` (as the DINOv2 reference masking
    generator): area between ``min_num_patches`` and ``remaining`` in
    either order (so small remainders get small blocks), and blocks
    strictly smaller than the grid in both directions.

    Args:
        grid (tuple[int, int]): (Hp, Wp) patch grid.
        num_masking_patches (int): Target number of masked cells.
        min_num_patches (int): Minimum block area. Defaults to 4.
        max_num_patches (int, optional): Maximum block area; ``None`` means
            no limit besides the target.
        aspect (tuple[float, float]): Block aspect-ratio range.
        max_tries (int): Failed attempts in a row before stopping.
        rule (str): ``'beit'`` or ``'dinov2'``. Defaults to 'beit'.
        rng: ``np.random`` or a ``np.random.RandomState``.

    Returns:
        np.ndarray: bool (Hp, Wp) mask.
    """
    if rule not in RULES:
        raise ValueError(f'rule={rule!r}: use one of {RULES}.')
    hp, wp = grid
    mask = np.zeros((hp, wp), dtype=bool)
    target = int(min(num_masking_patches, hp * wp))
    max_block = target if max_num_patches is None else max_num_patches
    log_aspect = (math.log(aspect[0]), math.log(aspect[1]))
    strict = rule == 'dinov2'
    count = 0
    while count < target:
        remaining = min(target - count, max_block)
        hi = remaining if strict else max(remaining, min_num_patches)
        delta = 0
        for _ in range(max_tries):
            h, w = draw_block(rng, min_num_patches, hi, log_aspect)
            fits = (h < hp and w < wp) if strict else (h <= hp and w <= wp)
            if h > 0 and w > 0 and fits:
                top = rng.randint(0, hp - h + 1)
                left = rng.randint(0, wp - w + 1)
                block = mask[top : top + h, left : left + w]
                new = h * w - int(block.sum())
                if 0 < new <= remaining:
                    block[...] = True
                    delta = new
                    break
        if delta == 0:
            break
        count += delta
    return mask


@TRANSFORMS.register_module()
class BlockwiseMaskGenerator(BaseTransform):
    """iBOT block-wise masks for every global crop made by ``MultiCrop``.

    For each of the ``G`` global crops (``results['num_global_crops']``,
    the first ``G`` entries of ``results['img']``), with probability
    ``mask_prob`` a mask ratio ``r ~ U(mask_ratio)`` is drawn and about
    ``r * Hp * Wp`` patches are masked in blocks (BEiT's block rule:
    block area >= ``min_num_patches``, aspect ratio in
    ``(min_aspect, 1 / min_aspect)``); the other crops get an all-False
    mask. Place it after :class:`MultiCrop` and before ``PackInputs``.

    The realised ratio never exceeds the drawn one and can fall a little
    short of it (the block rule stops after ten failed blocks in a row),
    as in the iBOT and DINOv2 reference code.

    Added keys: ``mask``: np.bool_ array (G, Hp, Wp) with
    ``(Hp, Wp) = (global_h // patch_size, global_w // patch_size)``.
    ``PackInputs`` puts it in ``data_sample.mask``; the algorithm gets
    ``torch.stack([s.mask for s in data_samples])`` of shape
    (B, G, Hp, Wp).

    Args:
        patch_size (int): ViT patch size. Defaults to 16.
        mask_ratio (tuple[float, float]): Range of the mask ratio.
            Defaults to (0.1, 0.5).
        mask_prob (float): Share of global crops that get a mask.
            Defaults to 0.5.
        min_num_patches (int): Minimum block area. Defaults to 4.
        max_num_patches (int, optional): Maximum block area. Defaults to
            None (only bounded by the target).
        min_aspect (float): Block aspect ratio range is
            ``(min_aspect, max_aspect or 1 / min_aspect)``. Defaults to 0.3.
        max_aspect (float, optional): Defaults to None.
        rule (str): Block rule of :func:`blockwise_mask`, ``'beit'``
            (default) or ``'dinov2'``. The DINOv2 reference also masks
            exactly ``mask_prob`` of the crops of a batch, with ratios
            spread over ``mask_ratio``: that is ``block_mask_collate``.
    """

    def __init__(
        self,
        patch_size: int = 16,
        mask_ratio: Sequence[float] = (0.1, 0.5),
        mask_prob: float = 0.5,
        min_num_patches: int = 4,
        max_num_patches: Optional[int] = None,
        min_aspect: float = 0.3,
        max_aspect: Optional[float] = None,
        rule: str = 'beit',
    ) -> None:
        if rule not in RULES:
            raise ValueError(f'rule={rule!r}: use one of {RULES}.')
        self.rule = rule
        lo, hi = (float(x) for x in mask_ratio)
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(
                f'mask_ratio must be (low, high) with 0 <= low '
                f'<= high <= 1, got {mask_ratio!r}.'
            )
        if not 0.0 <= mask_prob <= 1.0:
            raise ValueError(f'mask_prob must be in [0, 1], got {mask_prob}.')
        if patch_size < 1:
            raise ValueError(f'patch_size must be >= 1, got {patch_size}.')
        self.patch_size = int(patch_size)
        self.mask_ratio = (lo, hi)
        self.mask_prob = float(mask_prob)
        self.min_num_patches = int(min_num_patches)
        self.max_num_patches = max_num_patches
        self.aspect = (
            float(min_aspect),
            float(max_aspect or 1.0 / min_aspect),
        )

    def transform(self, results: dict) -> dict:
        imgs = results['img']
        if not isinstance(imgs, list):
            imgs = [imgs]
        num_global = int(results.get('num_global_crops', len(imgs)))
        h, w = imgs[0].shape[:2]
        hp, wp = h // self.patch_size, w // self.patch_size
        if hp == 0 or wp == 0:
            raise ValueError(
                f'Global crops of {h}x{w} are smaller than one '
                f'{self.patch_size}-pixel patch; raise the global crop size '
                'or lower patch_size.'
            )
        masks = np.zeros((num_global, hp, wp), dtype=bool)
        for i in range(num_global):
            if imgs[i].shape[:2] != (h, w):
                raise ValueError(
                    f'Global crops must share one size, got {(h, w)} and '
                    f'{imgs[i].shape[:2]}.'
                )
            if np.random.rand() < self.mask_prob:
                ratio = np.random.uniform(*self.mask_ratio)
                masks[i] = blockwise_mask(
                    (hp, wp),
                    int(ratio * hp * wp),
                    self.min_num_patches,
                    self.max_num_patches,
                    self.aspect,
                    **({} if self.rule == 'beit' else dict(rule=self.rule)),
                )
        results['mask'] = masks
        return results

    def __repr__(self) -> str:
        return (
            f'{self.__class__.__name__}(patch_size={self.patch_size}, '
            f'mask_ratio={self.mask_ratio}, mask_prob={self.mask_prob}, '
            f'min_num_patches={self.min_num_patches}, '
            f'aspect={self.aspect})'
        )
