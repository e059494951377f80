"""DINOv2 reference masking: batch-level masks and the 'dinov2' block rule."""

import math

import numpy as np
import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.datasets import batch_masks, block_mask_collate
from mmssl.datasets.transforms import BlockwiseMaskGenerator
from mmssl.datasets.transforms.blockwise_mask import (
    blockwise_mask,
    draw_block,
)


def test_exactly_half_of_the_crops_masked_with_spread_ratios():
    rng = np.random.RandomState(0)
    grid, n_crops = (16, 16), 32
    for _ in range(20):
        masks = batch_masks(n_crops, grid, (0.1, 0.5), 0.5, rng=rng)
        counts = masks.reshape(n_crops, -1).sum(1)
        assert (counts > 0).sum() == 16  # exactly int(32 * 0.5)
        ratios = np.sort(counts[counts > 0]) / 256
        # the i-th smallest target lies in [0.1 + 0.025 i, 0.1 + 0.025 (i+1)]
        # and the realised ratio never exceeds it (at most 1 block short)
        upper = 0.1 + 0.025 * np.arange(1, 17)
        assert (ratios <= upper + 1e-9).all()
        assert ratios.max() > 0.35 and ratios.min() < 0.15


def test_masked_crops_are_shuffled_over_the_batch():
    """Every crop position is masked about half of the time."""
    rng = np.random.RandomState(7)
    hits = np.zeros(8)
    for _ in range(400):
        masks = batch_masks(8, (8, 8), (0.1, 0.5), 0.5, rng=rng)
        hits += masks.reshape(8, -1).any(1)
    assert (np.abs(hits / 400 - 0.5) < 0.1).all(), hits


def test_mean_ratio_over_many_batches():
    """Mean masked share of the masked crops ~ (0.1 + 0.5) / 2, a little
    lower because the block rule may stop short of a target."""
    rng = np.random.RandomState(1)
    shares = []
    for _ in range(200):
        masks = batch_masks(8, (14, 14), (0.1, 0.5), 0.5, rng=rng)
        counts = masks.reshape(8, -1).sum(1)
        assert (counts > 0).sum() == 4
        shares += list(counts[counts > 0] / 196)
    assert 0.27 < np.mean(shares) <= 0.30, np.mean(shares)


def test_odd_batch_and_probabilities():
    rng = np.random.RandomState(2)
    masks = batch_masks(6, (8, 8), (0.2, 0.3), 0.34, rng=rng)
    assert (masks.reshape(6, -1).sum(1) > 0).sum() == 2  # int(6 * .34)
    assert not batch_masks(6, (8, 8), mask_prob=0.0, rng=rng).any()
    with pytest.raises(ValueError, match='mask_ratio'):
        batch_masks(4, (8, 8), (0.5, 0.1))


def test_block_attempts_log_uniform_aspect_and_area_per_attempt():
    """draw_block: log aspect uniform on [log .3, log 1/.3] and area
    uniform on [min, max] per attempt (checked through h * w and h / w)."""
    rng = np.random.RandomState(3)
    log_aspect = (math.log(0.3), -math.log(0.3))
    shapes = np.array(
        [draw_block(rng, 400, 1600, log_aspect) for _ in range(20000)]
    )
    log_hw = np.log(shapes[:, 0] / shapes[:, 1])
    # uniform on [-1.204, 1.204]: mean 0, quartiles at -+0.602
    assert abs(log_hw.mean()) < 0.02
    q1, q3 = np.quantile(log_hw, [0.25, 0.75])
    assert q1 == pytest.approx(-0.602, abs=0.03)
    assert q3 == pytest.approx(0.602, abs=0.03)
    area = shapes[:, 0] * shapes[:, 1]
    assert area.mean() == pytest.approx(1000, rel=0.02)
    assert np.quantile(area, 0.5) == pytest.approx(1000, rel=0.03)
    # area bounds in either order (the reference's small remainders)
    small = [draw_block(rng, 4, 1, (0.0, 0.0)) for _ in range(200)]
    assert {h for h, w in small} <= {1, 2} and (1, 1) in small


def test_dinov2_rule_blocks_stay_inside_the_grid():
    rng = np.random.RandomState(4)
    for _ in range(200):
        mask = blockwise_mask((6, 6), 30, rule='dinov2', rng=rng)
        assert mask.sum() <= 30
        # blocks are strictly smaller than the grid: a one-block mask
        # never fills a whole row or column
        one = blockwise_mask((6, 6), 5, 4, None, rule='dinov2', rng=rng)
        assert not one.all(axis=0).any() and not one.all(axis=1).any()
    # as tall as the grid is never allowed: a one-row grid gets no mask
    # (the 'beit' rule masks it)
    assert not blockwise_mask((1, 10), 4, 2, rule='dinov2', rng=rng).any()
    assert blockwise_mask((1, 10), 4, 2, rule='beit', rng=rng).any()
    # a remainder below min_num_patches gets a small block: area drawn in
    # [1, 4] can give a single cell ('beit' draws 4 and never fits 1)
    ones = [
        blockwise_mask((8, 8), 1, 4, rule='dinov2', rng=rng).sum()
        for _ in range(200)
    ]
    assert max(ones) == 1 and sum(ones) > 20
    assert not any(
        blockwise_mask((8, 8), 1, 4, rule='beit', rng=rng).any()
        for _ in range(50)
    )
    with pytest.raises(ValueError, match='rule'):
        blockwise_mask((6, 6), 5, rule='ibot')


def test_beit_rule_unchanged_by_default():
    np.random.seed(5)
    a = blockwise_mask((8, 8), 20)
    np.random.seed(5)
    b = blockwise_mask((8, 8), 20, rule='beit', rng=np.random)
    assert (a == b).all()
    gen = BlockwiseMaskGenerator(patch_size=4, rule='dinov2')
    out = gen.transform(
        dict(img=[np.zeros((32, 32, 3), np.uint8)] * 2, num_global_crops=2)
    )
    assert out['mask'].shape == (2, 8, 8)


def _batch(batch, size=32, n_local=1):
    return [
        dict(
            inputs=[torch.zeros(3, size, size, dtype=torch.uint8)] * 2
            + [torch.zeros(3, 16, 16, dtype=torch.uint8)] * n_local,
            data_samples=DataSample(),
        )
        for _ in range(batch)
    ]


def test_collate_sets_crop_major_masks_from_the_numpy_state():
    np.random.seed(6)
    out = block_mask_collate(_batch(5), patch_size=4, mask_ratio=(0.1, 0.5))
    masks = torch.stack([s.mask for s in out['data_samples']])  # (B,G,..)
    assert masks.shape == (5, 2, 8, 8) and masks.dtype == torch.bool
    assert (masks.flatten(2).sum(-1) > 0).sum() == 5  # half of 10 crops
    assert len(out['inputs']) == 3 and out['inputs'][0].shape[0] == 5
    np.random.seed(6)
    again = block_mask_collate(_batch(5), patch_size=4)
    assert torch.equal(
        masks, torch.stack([s.mask for s in again['data_samples']])
    )
    # the same masks as batch_masks with the seed the collate draws
    np.random.seed(6)
    rng = np.random.RandomState(np.random.randint(0, 2**31 - 1))
    ref = torch.from_numpy(batch_masks(10, (8, 8), rng=rng)).view(2, 5, 8, 8)
    assert torch.equal(masks, ref.transpose(0, 1))
    with pytest.raises(ValueError, match='patch_size'):
        block_mask_collate(_batch(2, size=8), patch_size=14)


def test_batch_mask_bound_is_the_reference_upper_bound():
    from mmssl.datasets.block_mask_collate import batch_mask_bound

    # 8 crops, half masked, ratio intervals with upper edges .2 .3 .4 .5 of
    # 16 patches: int(3.2) + int(4.8) + int(6.4) + int(8.0) = 21
    assert batch_mask_bound(8, (4, 4), (0.1, 0.5), 0.5) == 21
    assert batch_mask_bound(8, (4, 4), (0.1, 0.5), 0.0) == 0
    rng = np.random.RandomState(0)
    bound = batch_mask_bound(12, (8, 8), (0.1, 0.5), 0.5)
    counts = set()
    for _ in range(200):  # the bound holds and is not far above the max
        n = int(batch_masks(12, (8, 8), (0.1, 0.5), 0.5, rng=rng).sum())
        assert n <= bound
        counts.add(n)
    assert max(counts) > 0.8 * bound and len(counts) > 10


def test_collate_sets_the_same_bound_on_every_batch():
    bounds, sums = set(), set()
    for seed in range(4):
        np.random.seed(seed)
        out = block_mask_collate(_batch(5), patch_size=4)
        samples = out['data_samples']
        bounds |= {s.metainfo['num_masked_max'] for s in samples}
        sums.add(int(sum(s.mask.sum() for s in samples)))
    assert len(bounds) == 1 and len(sums) > 1  # counts vary, bound fixed
    assert max(sums) <= bounds.pop()
