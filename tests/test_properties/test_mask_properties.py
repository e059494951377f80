"""Properties of the patch-mask generators.

Block-wise masks (iBOT / DINOv2, BEiT's rule) never exceed their target
and may fall short of it: a hard upper bound, and a lower bound on the
mean over draws in the iBOT / DINOv2 setting (mask share <= 0.5, block
aspect range at least (0.5, 2), sides >= 6, a target of two minimal
blocks or more): the worst 20-draw mean seen over 1408 random such
settings was 0.84 of the target; 0.7 is asserted. Outside it the rule
can stop far short (square blocks only, share 1.0 on a 6x30 grid: one
6x6 block in some draws). SimMIM's random mask hits its ratio up to
one mask square: ``ceil(n * r)`` of the ``n`` squares.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from mmssl.datasets.transforms import BlockwiseMaskGenerator, blockwise_mask
from mmssl.visualization.mim_reconstruction import simmim_random_mask

SEEDS = st.integers(0, 2**32 - 1)


@given(
    grid=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    share=st.floats(0.0, 1.0),
    min_patches=st.integers(1, 9),
    max_patches=st.none() | st.integers(1, 200),
    min_aspect=st.floats(0.1, 1.0),
    seed=SEEDS,
)
def test_blockwise_mask_bounds(
    grid, share, min_patches, max_patches, min_aspect, seed
):
    hp, wp = grid
    target = int(share * hp * wp)
    np.random.seed(seed)
    counts = []
    for _ in range(20):
        mask = blockwise_mask(
            grid,
            target,
            min_patches,
            max_patches,
            (min_aspect, 1 / min_aspect),
        )
        assert mask.shape == grid and mask.dtype == np.bool_
        counts.append(int(mask.sum()))
        assert counts[-1] <= target
    # the setting of iBOT / DINOv2 (ratios up to 0.5, elongated blocks
    # allowed) on grids where a few blocks fit
    typical = share <= 0.5 and min_aspect <= 0.5 and max_patches is None
    if typical and min(grid) >= 6 and target >= 2 * min_patches:
        assert np.mean(counts) >= 0.7 * target, (counts, target)


def _results(num_global, global_hw, num_local):
    imgs = [np.zeros(global_hw + (3,), np.uint8)] * num_global
    imgs += [np.zeros((5, 7, 3), np.uint8)] * num_local
    return dict(img=imgs, num_global_crops=num_global)


@given(
    num_global=st.integers(1, 3),
    num_local=st.integers(0, 2),
    patch=st.integers(1, 16),
    cells=st.tuples(st.integers(1, 20), st.integers(1, 20)),
    extra=st.tuples(st.integers(0, 15), st.integers(0, 15)),
    ratio=st.tuples(st.floats(0, 1), st.floats(0, 1)).map(sorted),
    prob=st.sampled_from([0.0, 1.0]) | st.floats(0, 1),
    seed=SEEDS,
)
def test_blockwise_mask_generator(
    num_global, num_local, patch, cells, extra, ratio, prob, seed
):
    """(G, H // p, W // p) masks, each within the ratio's upper bound."""
    hw = tuple(c * patch + e % patch for c, e in zip(cells, extra))
    gen = BlockwiseMaskGenerator(patch, ratio, prob)
    np.random.seed(seed)
    out = gen.transform(_results(num_global, hw, num_local))
    masks = out['mask']
    assert masks.shape == (num_global,) + cells and masks.dtype == np.bool_
    counts = masks.reshape(num_global, -1).sum(1)
    assert (counts <= math.floor(ratio[1] * cells[0] * cells[1])).all()
    if prob == 0.0 or ratio[1] * cells[0] * cells[1] < 1:
        assert not masks.any()


@given(
    patch=st.integers(1, 8),
    cells=st.tuples(st.integers(6, 14), st.integers(6, 14)),
    seed=SEEDS,
)
def test_blockwise_mask_generator_at_prob_1(patch, cells, seed):
    """mask_prob=1 masks every global crop, near its ratio on average.

    Here the first block fails only after ten failed draws in a row
    (each about 1 in 5 at most), so an empty mask does not happen.
    """
    gen = BlockwiseMaskGenerator(patch, (0.3, 0.3), 1.0)
    np.random.seed(seed)
    hw = (cells[0] * patch, cells[1] * patch)
    masks = gen.transform(_results(4, hw, 1))['mask']
    target = int(0.3 * cells[0] * cells[1])  # >= 10
    counts = masks.reshape(4, -1).sum(1)
    assert (counts >= 1).all() and (counts <= target).all()
    assert counts.mean() >= 0.7 * target, (counts, target)


@given(
    side=st.integers(1, 12),
    mask_patch=st.integers(1, 4),
    ratio=st.floats(0.0, 1.0),
    seed=SEEDS,
)
def test_simmim_mask_ratio_and_squares(side, mask_patch, ratio, seed):
    grid = side * mask_patch
    mask = simmim_random_mask(
        grid, mask_patch, ratio, np.random.default_rng(seed)
    )
    assert mask.shape == (grid, grid) and mask.dtype == torch.float32
    assert set(mask.unique().tolist()) <= {0.0, 1.0}
    # constant on each mask_patch x mask_patch square
    squares = mask.reshape(side, mask_patch, side, mask_patch)
    first = squares[:, :1, :, :1]
    assert torch.equal(squares, first.expand_as(squares))
    n = side * side
    assert int(first.sum()) == math.ceil(n * ratio)


def test_simmim_mask_patch_must_divide_grid():
    with pytest.raises(ValueError, match='divide'):
        simmim_random_mask(10, 3, 0.5, np.random.default_rng(0))
