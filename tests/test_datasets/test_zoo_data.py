"""RelativeLocPatches and ClusterUniformSampler."""

import numpy as np
import pytest
import torch

from mmssl.datasets import ClusterUniformSampler
from mmssl.datasets.transforms import RelativeLocPatches


def test_relative_loc_patches_stay_in_their_cells():
    np.random.seed(0)
    # pixel value = row * 100 + col, so a patch reveals where it came from
    rows, cols = np.mgrid[:30, :30]
    img = (rows * 100 + cols).astype(np.int32)[..., None].repeat(3, 2)
    out = RelativeLocPatches(patch_size=7)(dict(img=img))
    assert len(out['img']) == 9 and out['img_shape'] == (7, 7)
    for i, patch in enumerate(out['img']):
        assert patch.shape == (7, 7, 3)
        top, left = divmod(int(patch[0, 0, 0]), 100)
        assert 10 * (i // 3) <= top <= 10 * (i // 3) + 3
        assert 10 * (i % 3) <= left <= 10 * (i % 3) + 3
        # a contiguous crop: values grow by 100 per row and 1 per column
        assert (np.diff(patch[..., 0], axis=0) == 100).all()
        assert (np.diff(patch[..., 0], axis=1) == 1).all()
    with pytest.raises(ValueError, match='patch_size=11'):
        RelativeLocPatches(patch_size=11)(dict(img=img))


def test_cluster_uniform_sampler_balances_clusters_and_ranks():
    dataset = list(range(100))
    sampler = ClusterUniformSampler(dataset, seed=0)
    assert sorted(sampler) == dataset  # no labels yet: a permutation
    labels = torch.tensor([0] * 90 + [1] * 10)
    sampler.set_labels(labels)
    drawn = torch.tensor(list(sampler))
    assert len(drawn) == len(sampler) == 100
    counts = torch.bincount(labels[drawn], minlength=2)
    assert counts.tolist() == [50, 50]
    sampler.set_epoch(1)
    assert list(sampler) != drawn.tolist()  # reshuffled per epoch
    # two ranks see disjoint halves of the same global order
    ranks = []
    for rank in range(2):
        s = ClusterUniformSampler(dataset, seed=0)
        s.rank, s.world_size = rank, 2
        s.num_samples, s.total_size = 50, 100
        s.set_labels(labels)
        ranks.append(list(s))
    assert len(ranks[0]) == len(ranks[1]) == 50
    merged = [None] * 100
    merged[0::2], merged[1::2] = ranks
    sampler.set_epoch(0)
    assert merged == list(sampler)
    with pytest.raises(ValueError, match='99 labels'):
        sampler.set_labels(torch.zeros(99))
