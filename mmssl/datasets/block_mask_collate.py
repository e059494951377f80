"""Batch-level iBOT masks as the DINOv2 reference makes them."""

from typing import Optional, Sequence

import numpy as np
import torch
from mmengine.dataset import default_collate

from mmssl.registry import FUNCTIONS

from .transforms.blockwise_mask import blockwise_mask


def batch_masks(
    num_crops: int,
    grid: tuple,
    mask_ratio: Sequence[float] = (0.1, 0.5),
    mask_prob: float = 0.5,
    min_num_patches: int = 4,
    max_num_patches: Optional[float] = 0.5,
    min_aspect: float = 0.3,
    rule: str = 'dinov2',
    rng=np.random,
) -> np.ndarray:
    """Masks of the ``num_crops`` global crops of one batch.

    As the DINOv2 reference (Oquab et al. 2023,
    https://arxiv.org/abs/2304.07193): exactly ``int(num_crops *
    mask_prob)`` crops are masked; the ratio range is cut into as many
    equal intervals, the i-th masked crop gets a ratio drawn uniformly in
    the i-th interval (so the ratios are spread evenly over the range in
    every batch), and the masks are then shuffled over the crops.

    Args:
        num_crops (int): Crops in the batch (G * B).
        grid (tuple[int, int]): (Hp, Wp) patch grid.
        mask_ratio (Sequence[float]): Range of the mask ratio.
        mask_prob (float): Share of the crops that are masked.
        min_num_patches (int): Minimum block area.
        max_num_patches (float, optional): Maximum block area, a share of
            the grid if < 1 (the reference: 0.5), cells if >= 1, ``None``
            for no limit.
        min_aspect (float): Aspect ratios in ``(min_aspect, 1/min_aspect)``.
        rule (str): Block rule of :func:`blockwise_mask`.
        rng: ``np.random`` or a ``np.random.RandomState``.

    Returns:
        np.ndarray: bool (num_crops, Hp, Wp).
    """
    lo, hi = (float(x) for x in mask_ratio)
    if not (0.0 <= lo <= hi <= 1.0 and 0.0 <= mask_prob <= 1.0):
        raise ValueError(
            'Need 0 <= mask_ratio[0] <= mask_ratio[1] <= 1 and 0 <= '
            f'mask_prob <= 1, got {mask_ratio!r} and {mask_prob}.'
        )
    num_patches = grid[0] * grid[1]
    max_block = max_num_patches
    if max_block is not None and max_block < 1:
        max_block = max_block * num_patches
    num_masked = int(num_crops * mask_prob)
    edges = np.linspace(lo, hi, num_masked + 1)
    masks = np.zeros((num_crops, *grid), dtype=bool)
    for i in range(num_masked):
        ratio = rng.uniform(edges[i], edges[i + 1])
        masks[i] = blockwise_mask(
            grid,
            int(num_patches * ratio),
            min_num_patches,
            max_block,
            (min_aspect, 1.0 / min_aspect),
            rule=rule,
            rng=rng,
        )
    return masks[rng.permutation(num_crops)]


def batch_mask_bound(
    num_crops: int,
    grid: tuple,
    mask_ratio: Sequence[float] = (0.1, 0.5),
    mask_prob: float = 0.5,
    **_,
) -> int:
    """Most patches :func:`batch_masks` can mask in one batch.

    The i-th masked crop targets ``int(P * r)`` patches with ``r`` below
    the upper edge of its interval, and the block rule never exceeds its
    target, so the bound is the sum of ``int(P * edge)`` over the upper
    edges (as the DINOv2 reference collate's ``upperbound``). It depends
    on the batch size only, so the masked-patch buffer of the DINO family
    has one shape for every batch.
    """
    lo, hi = (float(x) for x in mask_ratio)
    num_patches = grid[0] * grid[1]
    num_masked = int(num_crops * mask_prob)
    edges = np.linspace(lo, hi, num_masked + 1)
    return int(sum(int(num_patches * e) for e in edges[1:]))


@FUNCTIONS.register_module()
def block_mask_collate(
    data_batch: Sequence[dict],
    patch_size: int = 14,
    num_global_crops: int = 2,
    **mask_cfg,
) -> dict:
    """``default_collate`` plus DINOv2's batch-level iBOT masks.

    Use as ``collate_fn=dict(type='mmssl.block_mask_collate',
    patch_size=14)`` instead of ``BlockwiseMaskGenerator`` in the pipeline
    (a mask it made is replaced); the ``mmssl.`` scope lets mmengine's
    ``Runner.build_dataloader`` find it in mmssl's function registry.
    Sets ``data_sample.mask`` (G, Hp, Wp) of every sample from
    :func:`batch_masks` over the batch's G * B global crops (crop-major,
    as the algorithms concatenate them); ``mask_cfg`` goes to it. Every
    sample's metainfo ``num_masked_max`` gets :func:`batch_mask_bound`,
    the size of the DINO family's fixed masked-patch buffer.

    Randomness: one seed is drawn from NumPy's global generator and drives a
    private ``RandomState``. In a loader worker that generator was last
    seeded by the batch's last sample (mmssl's per-sample seeds), so the
    masks depend on the batch's samples only, whatever the number of
    workers; with ``num_workers=0`` it is the training process's generator,
    which checkpoints save and resumes restore. Either way a resumed run
    draws the masks of the straight run.

    Args:
        data_batch (Sequence[dict]): Packed samples (``inputs``: the
            views, global first; ``data_samples``).
        patch_size (int): ViT patch size. Defaults to 14.
        num_global_crops (int): G. Defaults to 2.
        **mask_cfg: Arguments of :func:`batch_masks`.
    """
    batch = len(data_batch)
    views = data_batch[0]['inputs']
    h, w = views[0].shape[-2:]
    grid = (h // patch_size, w // patch_size)
    if min(grid) < 1:
        raise ValueError(
            f'Global crops of {h}x{w} are smaller than one {patch_size}-pixel '
            "patch; set block_mask_collate patch_size to the backbone's."
        )
    rng = np.random.RandomState(np.random.randint(0, 2**31 - 1))
    masks = batch_masks(num_global_crops * batch, grid, rng=rng, **mask_cfg)
    masks = torch.from_numpy(masks).view(num_global_crops, batch, *grid)
    bound = batch_mask_bound(num_global_crops * batch, grid, **mask_cfg)
    for b, item in enumerate(data_batch):
        item['data_samples'].set_mask(masks[:, b].clone())  # (G, Hp, Wp)
        item['data_samples'].set_metainfo(dict(num_masked_max=bound))
    return default_collate(data_batch)
