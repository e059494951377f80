# Copyright (c) mmssl contributors. All rights reserved.
"""Mixed-resolution batches: one crop-size pair per batch, set ratios.

The high-resolution stage of DINOv3 trains on batches of several global /
local crop sizes, each batch at one size pair drawn with set ratios. Three
parts, selected in the config::

    train_dataloader = dict(
        drop_last=False,  # the batch sampler drops the last batch
        batch_sampler=dict(
            type='MixedResolutionBatchSampler', ratios=[0.5, 0.3, 0.2]),
        dataset=dict(
            type='MixedResolutionDataset',
            dataset=dict(type='ImageFolderDataset', ..., pipeline=[
                ...,
                dict(type='MixedResolutionMultiCrop',
                     global_sizes=[224, 256, 512],
                     local_sizes=[96, 112, 224]),
                ...])))

:class:`MixedResolutionBatchSampler` tags every index of a batch with the
batch's size index (:class:`SizedIndex`, an ``int``);
:class:`MixedResolutionDataset` reads the tag and loads the sample inside
:func:`~mmssl.datasets.transforms.mixed_resolution_crop.size_index_scope`,
where ``MixedResolutionMultiCrop`` picks its sizes. The size sequence of an
epoch depends only on ``(seed, epoch)``, the same on every rank, and the
per-sample seeds of exact resume are untouched, so a run resumed in the
middle of an epoch sees the same sizes and crops.
"""

from typing import Iterator, List, Optional, Sequence

import numpy as np
from mmengine.dist import sync_random_seed
from torch.utils.data import Dataset, Sampler

from mmssl.registry import DATA_SAMPLERS, DATASETS

from .transforms.mixed_resolution_crop import size_index_scope


class SizedIndex(int):
    """A dataset index carrying the size index of its batch."""

    size_index: int

    def __new__(cls, index: int, size_index: int) -> 'SizedIndex':
        obj = super().__new__(cls, index)
        obj.size_index = int(size_index)
        return obj

    def __reduce__(self):
        return (SizedIndex, (int(self), self.size_index))

    def __repr__(self) -> str:
        return f'SizedIndex({int(self)}, size_index={self.size_index})'


@DATA_SAMPLERS.register_module()
class MixedResolutionBatchSampler(Sampler):
    """Batches of ``batch_size`` indices, each tagged with one size index.

    The size index of batch ``b`` of an epoch is the ``b``-th draw of a
    generator seeded with ``(seed, epoch)`` from ``range(len(ratios))``
    with probabilities ``ratios / sum(ratios)``. ``epoch`` is the wrapped
    sampler's (``DefaultSampler.set_epoch``), so all ranks draw the same
    sequence, and iterating an epoch again (a resume that skips batches)
    gives the same sizes.

    Args:
        sampler (Sampler): Index sampler (mmengine passes the loader's).
        batch_size (int): Samples per batch (mmengine passes it).
        ratios (Sequence[float]): Relative frequency of each size pair.
        drop_last (bool): Drop the last incomplete batch. Defaults to True.
        seed (int, optional): Shared seed; None syncs a random one.
    """

    def __init__(
        self,
        sampler: Sampler,
        batch_size: int,
        ratios: Sequence[float],
        drop_last: bool = True,
        seed: Optional[int] = None,
    ) -> None:
        probs = np.asarray(ratios, dtype=np.float64)
        if probs.ndim != 1 or len(probs) == 0 or (probs < 0).any():
            raise ValueError(f'ratios must be >= 0, got {ratios!r}.')
        if probs.sum() <= 0:
            raise ValueError(f'ratios must not all be 0, got {ratios!r}.')
        if batch_size < 1:
            raise ValueError(f'batch_size must be >= 1, got {batch_size}.')
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last
        self.probs = probs / probs.sum()
        self.seed = sync_random_seed() if seed is None else int(seed)

    @property
    def epoch(self) -> int:
        return int(getattr(self.sampler, 'epoch', 0))

    def set_epoch(self, epoch: int) -> None:
        """Forwarded to the wrapped sampler."""
        self.sampler.set_epoch(epoch)

    def size_indices(self, num_batches: int) -> np.ndarray:
        """The size index of each of the first batches of this epoch."""
        rng = np.random.default_rng([self.seed, self.epoch])
        return rng.choice(len(self.probs), size=num_batches, p=self.probs)

    def __len__(self) -> int:
        n = len(self.sampler)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[List[SizedIndex]]:
        sizes = self.size_indices(len(self))
        batch: List[int] = []
        b = 0
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield [SizedIndex(i, sizes[b]) for i in batch]
                batch, b = [], b + 1
        if batch and not self.drop_last:
            yield [SizedIndex(i, sizes[b]) for i in batch]


@DATASETS.register_module()
class MixedResolutionDataset(Dataset):
    """Loads each sample at the size index its :class:`SizedIndex` carries.

    Other attributes are those of the wrapped dataset.

    Args:
        dataset (Dataset | dict): The dataset, or its config.
    """

    def __init__(self, dataset) -> None:
        if isinstance(dataset, dict):
            dataset = DATASETS.build(dataset)
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, idx):
        size_index = getattr(idx, 'size_index', None)
        with size_index_scope(size_index):
            return self.dataset[int(idx)]

    def __getattr__(self, name: str):
        if name == 'dataset':  # not set yet (unpickling)
            raise AttributeError(name)
        return getattr(self.dataset, name)


__all__ = [
    'MixedResolutionBatchSampler',
    'MixedResolutionDataset',
    'SizedIndex',
]
