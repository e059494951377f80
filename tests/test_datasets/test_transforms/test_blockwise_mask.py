import numpy as np
import pytest

from mmssl.datasets.transforms import BlockwiseMaskGenerator, blockwise_mask


def _results(g=2, size=224, local=2):
    imgs = [np.zeros((size, size, 3), np.uint8)] * g
    imgs += [np.zeros((96, 96, 3), np.uint8)] * local
    return dict(img=imgs, num_global_crops=g)


def test_shape_and_dtype():
    out = BlockwiseMaskGenerator(patch_size=14)(_results())
    assert out['mask'].shape == (2, 16, 16)
    assert out['mask'].dtype == np.bool_


def test_ratio_bounds_and_masked_share():
    np.random.seed(0)
    gen = BlockwiseMaskGenerator(
        patch_size=16, mask_ratio=(0.1, 0.5), mask_prob=0.5
    )
    ratios = np.concatenate(
        [gen(_results())['mask'].reshape(2, -1).mean(1) for _ in range(1000)]
    )
    masked = ratios[ratios > 0]
    share = len(masked) / len(ratios)
    # Binomial(2000, 0.5): 4 standard deviations are about 0.045.
    assert abs(share - 0.5) < 0.045
    assert masked.max() <= 0.5
    assert masked.min() >= 0.07  # the block rule may stop a bit short
    # Uniform(0.1, 0.5) has mean 0.3; blocks stop slightly below target.
    assert 0.25 < masked.mean() <= 0.3


def test_blocks_never_exceed_target():
    np.random.seed(1)
    for target in [0, 1, 4, 10, 50, 100]:
        m = blockwise_mask((10, 10), target)
        assert m.sum() <= target
    assert blockwise_mask((10, 10), 100).sum() >= 90


def test_mask_prob_extremes_and_errors():
    assert not BlockwiseMaskGenerator(mask_prob=0.0)(_results())['mask'].any()
    assert (
        BlockwiseMaskGenerator(mask_prob=1.0)(_results())['mask']
        .reshape(2, -1)
        .any(1)
        .all()
    )
    with pytest.raises(ValueError, match='mask_ratio'):
        BlockwiseMaskGenerator(mask_ratio=(0.6, 0.5))
    with pytest.raises(ValueError, match='patch'):
        BlockwiseMaskGenerator(patch_size=32)(_results(size=16))


def test_stack_contract_after_packing():
    import torch
    from mmengine.dataset import Compose, default_collate

    pipe = Compose(
        [
            dict(
                type='MultiCrop',
                global_size=32,
                local_size=16,
                num_local_crops=1,
            ),
            dict(type='BlockwiseMaskGenerator', patch_size=8),
            dict(type='PackInputs'),
        ]
    )
    img = np.zeros((40, 50, 3), np.uint8)
    batch = default_collate([pipe(dict(img=img)) for _ in range(2)])
    masks = torch.stack([s.mask for s in batch['data_samples']])
    assert masks.shape == (2, 2, 4, 4) and masks.dtype == torch.bool


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md). The block rule is driven by scripted draws:
# ``uniform(low, high)`` returns ``low + f * (high - low)`` for the next
# scripted fraction ``f`` (and fails when the script is used up, so any
# extra draw fails the test); ``randint`` returns its largest value, which
# puts every block in the bottom-right corner.
class _OutOfDraws(Exception):
    pass


def _script(monkeypatch, fractions):
    left, calls = list(fractions), []

    def uniform(low=0.0, high=1.0, size=None):
        calls.append((low, high))
        if not left:
            raise _OutOfDraws(calls)
        return low + left.pop(0) * (high - low)

    def randint(low, high=None, size=None, dtype=int):
        if high is None:  # numpy: randint(n) draws from [0, n)
            low, high = 0, low
        return high - 1

    monkeypatch.setattr(np.random, 'uniform', uniform)
    monkeypatch.setattr(np.random, 'randint', randint)
    return left, calls


def _grid(shape, cells):
    out = np.zeros(shape, dtype=bool)
    for r, c in cells:
        out[r, c] = True
    return out


def test_block_rule_with_scripted_draws(monkeypatch):
    # area 4, aspect 1 (f=0.5 of the log range): a 2x2 block at the corner
    left, _ = _script(monkeypatch, [0.0, 0.5])
    m = blockwise_mask((4, 4), 4)
    assert m.dtype == np.bool_ and not left
    assert np.array_equal(m, _grid((4, 4), [(2, 2), (2, 3), (3, 2), (3, 3)]))
    # aspect 0.3: h = round(sqrt(4 * 0.3)) = 1, w = round(sqrt(4 / 0.3)) = 4
    _script(monkeypatch, [0.0, 0.0])
    assert np.array_equal(
        blockwise_mask((4, 4), 4),
        _grid((4, 4), [(3, 0), (3, 1), (3, 2), (3, 3)]),
    )
    # aspect 1 / 0.3: a 4x1 column
    _script(monkeypatch, [0.0, 1.0])
    assert np.array_equal(
        blockwise_mask((4, 4), 4),
        _grid((4, 4), [(0, 3), (1, 3), (2, 3), (3, 3)]),
    )
    # a block as large as the grid, and a block adding a single cell
    _script(monkeypatch, [0.0, 0.5])
    assert blockwise_mask((2, 2), 4).all()
    _script(monkeypatch, [0.0, 0.5])
    m = blockwise_mask((2, 2), 1, min_num_patches=1)
    assert np.array_equal(m, _grid((2, 2), [(1, 1)]))
    # nothing fits (2x2 adds 4 > 3 cells): exactly 10 tries, then stop
    left, calls = _script(monkeypatch, [0.5] * 20)
    assert not blockwise_mask((2, 2), 3).any()
    assert not left and len(calls) == 20
    # the area is drawn from [min_num_patches, min(target, max_num_patches)]
    _, calls = _script(monkeypatch, [])
    with pytest.raises(_OutOfDraws):
        blockwise_mask((4, 4), 8, min_num_patches=1, max_num_patches=2)
    assert calls == [(1, 2)]


def test_generator_passes_its_settings_and_draws(monkeypatch):
    import importlib

    module = importlib.import_module(
        'mmssl.datasets.transforms.blockwise_mask'
    )
    calls = []

    def spy(grid, num, min_num, max_num, aspect):
        calls.append((grid, num, min_num, max_num, aspect))
        return np.zeros(grid, dtype=bool)

    monkeypatch.setattr(module, 'blockwise_mask', spy)
    gen = BlockwiseMaskGenerator(
        patch_size=8,
        mask_ratio=(0.5, 0.5),
        mask_prob=1.0,
        min_num_patches=2,
        max_num_patches=3,
        min_aspect=0.5,
    )
    imgs = [np.zeros((32, 24, 3), np.uint8)] * 2 + [np.zeros((8, 8, 3))]
    out = gen(dict(img=imgs, num_global_crops=2))
    assert out['mask'].shape == (2, 4, 3)
    assert calls == [((4, 3), 6, 2, 3, (0.5, 2.0))] * 2
    # a crop is masked when the draw is below mask_prob (not at it)
    monkeypatch.setattr(np.random, 'rand', lambda: 0.5)
    calls.clear()
    BlockwiseMaskGenerator(mask_prob=0.5)(_results())
    assert calls == []
    # one image, not a list; no num_global_crops: every image is global
    one = BlockwiseMaskGenerator(patch_size=8)(dict(img=imgs[0]))
    assert one['mask'].shape == (1, 4, 3)
    two = BlockwiseMaskGenerator(patch_size=8)(dict(img=imgs[:2]))
    assert two['mask'].shape == (2, 4, 3)
    # the size comes from the first crop
    small = [np.zeros((16, 16, 3))] + [np.zeros((8, 8, 3))]
    first = BlockwiseMaskGenerator(patch_size=8)(
        dict(img=small, num_global_crops=1)
    )
    assert first['mask'].shape == (1, 2, 2)


def test_generator_defaults_bounds_and_messages():
    assert repr(BlockwiseMaskGenerator()) == (
        'BlockwiseMaskGenerator(patch_size=16, mask_ratio=(0.1, 0.5), '
        'mask_prob=0.5, min_num_patches=4, '
        f'aspect=(0.3, {1 / 0.3}))'
    )
    assert BlockwiseMaskGenerator()(_results())['mask'].shape == (2, 14, 14)
    for ratio in [(0.0, 0.5), (0.3, 0.3), (0.5, 1.0)]:  # bounds included
        BlockwiseMaskGenerator(mask_ratio=ratio)
    BlockwiseMaskGenerator(patch_size=1)
    with pytest.raises(ValueError, match='mask_ratio'):
        BlockwiseMaskGenerator(mask_ratio=(0.5, 1.5))
    with pytest.raises(
        ValueError, match=r'^mask_prob must be in \[0, 1\], got 1.5\.$'
    ):
        BlockwiseMaskGenerator(mask_prob=1.5)
    with pytest.raises(
        ValueError, match=r'^patch_size must be >= 1, got 0\.$'
    ):
        BlockwiseMaskGenerator(patch_size=0)
    # one patch tall or wide is enough; zero patches in either is an error
    gen = BlockwiseMaskGenerator(patch_size=16, mask_prob=0.0)
    assert gen(dict(img=[np.zeros((16, 48, 3))]))['mask'].shape == (1, 1, 3)
    assert gen(dict(img=[np.zeros((48, 16, 3))]))['mask'].shape == (1, 3, 1)
    with pytest.raises(
        ValueError,
        match=r'^Global crops of 8x48 are smaller than one 16-pixel patch; '
        r'raise the global crop size or lower patch_size\.$',
    ):
        gen(dict(img=[np.zeros((8, 48, 3))]))
    with pytest.raises(
        ValueError,
        match=r'^Global crops must share one size, got \(32, 32\) and '
        r'\(16, 16\)\.$',
    ):
        gen(dict(img=[np.zeros((32, 32, 3)), np.zeros((16, 16, 3))]))


def test_dinov2_rule_blocks_strictly_inside_the_grid_and_messages():
    """rule='dinov2' never places a block as tall or as wide as the grid:
    on a 1-row (or 1-column) grid it masks nothing, where 'beit' masks."""
    for grid in ((1, 4), (4, 1)):
        for seed in range(5):
            rng = np.random.RandomState(seed)
            kw = dict(min_num_patches=1, rng=rng)
            assert not blockwise_mask(grid, 2, rule='dinov2', **kw).any()
            assert blockwise_mask(grid, 2, rule='beit', **kw).sum() == 2
    # the generator hands its rule on (a 16x64 crop is a 1x4 patch grid)
    results = dict(img=[np.zeros((16, 64, 3), np.uint8)], num_global_crops=1)
    for rule, masked in (('dinov2', False), ('beit', True)):
        np.random.seed(0)
        gen = BlockwiseMaskGenerator(
            mask_ratio=(0.5, 0.5), mask_prob=1.0, min_num_patches=1, rule=rule
        )
        assert gen(dict(results))['mask'].any() == masked
    message = "rule='ibot': use one of "
    with pytest.raises(ValueError, match=message):
        blockwise_mask((4, 4), 2, rule='ibot')
    with pytest.raises(ValueError, match=message):
        BlockwiseMaskGenerator(rule='ibot')


def test_dinov2_rule_draws_small_areas_for_small_remainders(monkeypatch):
    # target 3 < min_num_patches 4: 'dinov2' draws the area between 4 and 3,
    # 'beit' between 4 and max(3, 4)
    for rule, first in (('dinov2', (4, 3)), ('beit', (4, 4))):
        _, calls = _script(monkeypatch, [])
        with pytest.raises(_OutOfDraws):
            blockwise_mask((4, 4), 3, rule=rule, rng=np.random)
        assert calls == [first]
