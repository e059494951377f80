"""Mixed-resolution batches: one size pair per batch, ratios, exact resume."""

import numpy as np
import pytest
from mmengine.dataset import DefaultSampler
from torch.utils.data import DataLoader, Dataset

from mmssl.datasets import (
    MixedResolutionBatchSampler,
    MixedResolutionDataset,
    SizedIndex,
)
from mmssl.datasets.transforms import MixedResolutionMultiCrop
from mmssl.engine.resume.data import ResumableData

GLOBAL, LOCAL = [32, 40, 48], [8, 12, 16]


class Images(Dataset):
    """Random uint8 images through a MixedResolutionMultiCrop."""

    def __init__(self, n: int = 24) -> None:
        rng = np.random.default_rng(0)
        self.imgs = [
            rng.integers(0, 255, (60, 70, 3), np.uint8) for _ in range(n)
        ]
        self.crop = MixedResolutionMultiCrop(
            global_sizes=GLOBAL,
            local_sizes=LOCAL,
            num_global_crops=2,
            num_local_crops=2,
        )
        self.tag = 'inner'

    def __len__(self) -> int:
        return len(self.imgs)

    def __getitem__(self, idx):
        out = self.crop(dict(img=self.imgs[idx]))
        return dict(views=out['img'], size_index=out['size_index'])


def sampler(n=24, ratios=(0.5, 0.3, 0.2), batch=4, seed=7):
    base = DefaultSampler(list(range(n)), shuffle=True, seed=1)
    return MixedResolutionBatchSampler(base, batch, ratios, seed=seed)


def test_every_batch_has_one_size_pair():
    data = MixedResolutionDataset(Images())
    loader = DataLoader(data, batch_sampler=sampler())
    seen = set()
    for batch in loader:
        index = int(batch['size_index'][0])
        assert (batch['size_index'] == index).all()
        g, loc = GLOBAL[index], LOCAL[index]
        shapes = [tuple(v.shape) for v in batch['views']]
        assert shapes == [(4, g, g, 3)] * 2 + [(4, loc, loc, 3)] * 2
        seen.add(index)
    assert len(loader) == 6 and data.tag == 'inner'  # attributes delegated


def test_frequencies_follow_the_ratios():
    ratios = (0.5, 0.3, 0.2)
    bs = sampler(n=40000, ratios=ratios, batch=2)
    counts = np.zeros(3)
    for batch in bs:
        assert len({i.size_index for i in batch}) == 1
        counts[batch[0].size_index] += 1
    freq = counts / counts.sum()  # 20000 batches: std <= 0.0036
    assert np.abs(freq - ratios).max() < 0.015, freq
    bs.set_epoch(1)  # another epoch, another sequence, same ratios
    assert not np.array_equal(bs.size_indices(50), sampler().size_indices(50))
    assert (sampler(ratios=(0, 1, 0)).size_indices(100) == 1).all()


def test_sizes_shared_by_ranks_and_epochs_reproducible():
    a, b = sampler(seed=3), sampler(seed=3)
    a.set_epoch(2)
    b.set_epoch(2)
    assert [x[0].size_index for x in a] == [x[0].size_index for x in b]


@pytest.mark.parametrize('workers', [0, 1])
def test_resume_mid_epoch_gives_the_same_sizes_and_crops(workers):
    def batches(skip):
        loader = DataLoader(
            MixedResolutionDataset(Images()),
            batch_sampler=sampler(),
            num_workers=workers,
            timeout=60 if workers else 0,
        )
        data = ResumableData(loader, sample_seeds=True)
        loader.batch_sampler.set_epoch(3)
        return list(data.iterate(epoch=3, skip=skip, seed=5, rank=0))

    straight, resumed = batches(0), batches(4)
    assert len(straight) == 6 and len(resumed) == 2
    sizes = [int(b['size_index'][0]) for b in straight]
    assert len(set(sizes)) > 1  # several sizes occur in this epoch
    for a, b in zip(straight[4:], resumed):
        assert int(a['size_index'][0]) == int(b['size_index'][0])
        for va, vb in zip(a['views'], b['views']):
            assert va.shape == vb.shape and (va == vb).all()


def test_mmengine_builds_the_loader_from_a_config():
    from mmengine.runner import Runner

    loader = Runner.build_dataloader(
        dict(
            batch_size=4,
            drop_last=False,  # the batch sampler drops the last batch
            sampler=dict(type='DefaultSampler', shuffle=True, seed=0),
            batch_sampler=dict(
                type='MixedResolutionBatchSampler', ratios=[1, 1, 1], seed=0
            ),
            dataset=MixedResolutionDataset(Images(n=10)),
        ),
        seed=0,
    )
    assert isinstance(loader.batch_sampler, MixedResolutionBatchSampler)
    assert len(loader) == 2  # 10 // 4, last batch dropped
    assert {int(b['size_index'][0]) for b in loader} <= {0, 1, 2}


def test_transform_without_a_size_index_explains_the_setup():
    with pytest.raises(RuntimeError, match='MixedResolutionDataset'):
        Images()[0]
    with pytest.raises(ValueError, match='same length'):
        MixedResolutionMultiCrop(global_sizes=[32], local_sizes=[8, 16])
    with pytest.raises(ValueError, match='ratios'):
        sampler(ratios=(0, 0))
    assert SizedIndex(3, 1) == 3 and SizedIndex(3, 1).size_index == 1
