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
