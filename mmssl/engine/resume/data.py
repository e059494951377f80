"""Data iteration that can start in the middle of an epoch.

:class:`ResumableData` iterates a training DataLoader through a private
clone of it that shares the dataset, sampler, collate function, workers
settings and ``worker_init_fn``. Its batch sampler (:class:`SkipBatchSampler`)
can drop the first ``k`` index batches of an epoch *before* anything is
loaded, so a resumed run continues with the next unseen batch without
reading, decoding or transforming the skipped samples.

With ``sample_seeds=True`` every sample's transforms run under their own
seed, derived from ``(run seed, epoch, rank, position in the epoch)``
(:class:`SeededSamples`). The augmentation of a sample then depends neither
on the worker that loads it nor on what the worker loaded before, which
makes mid-epoch resume exact with any ``num_workers`` and persistent
workers, and gives the same augmentations for any ``num_workers``.
"""

import itertools
from typing import Iterator, List, Optional

from torch.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    get_worker_info,
)

from .rng import fork_cpu_rng, seed_sample


class SeededSamples(Dataset):
    """Dataset view whose items are ``(epoch, position, index)`` keys.

    ``self[(epoch, position, index)]`` returns ``dataset[index]`` computed
    with python, numpy and torch CPU seeded by :func:`seed_sample`; the
    calling process's random states are restored afterwards.

    Args:
        dataset (Dataset): The training dataset.
        seed (int): The run seed.
        rank (int): Process rank.
    """

    def __init__(self, dataset: Dataset, seed: int, rank: int) -> None:
        self.dataset = dataset
        self.seed = int(seed)
        self.rank = int(rank)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key):
        return self.__getitems__([key])[0]

    def __getitems__(self, keys: List) -> List:
        """Load a batch; the DataLoader's fetcher calls this once per batch.

        In a worker the seeds are simply set; in the training process
        (``num_workers=0``) its random states are put back afterwards, once
        per batch.
        """
        if get_worker_info() is not None:
            return [self._load(key) for key in keys]
        with fork_cpu_rng():
            return [self._load(key) for key in keys]

    def _load(self, key):
        epoch, position, index = key
        seed_sample(self.seed, epoch, self.rank, position)
        return self.dataset[index]


class SkipBatchSampler:
    """A batch sampler that can start an epoch after its first batches.

    Iterating it iterates the wrapped batch sampler (so the wrapped
    sampler's ``set_epoch`` and labels still apply), drops the first
    :attr:`skip` batches (index lists only: nothing is loaded), and
    yields the rest. The skipped batches and the first kept one are
    drawn eagerly when iteration starts, so a sampler that draws from a
    global generator does so at the same moment in a straight and in a
    resumed run.

    With ``tag=True`` each index ``i`` becomes ``(epoch, position, i)``
    for :class:`SeededSamples`, where ``position`` counts the samples of
    this epoch from 0, skipped ones included.

    Args:
        batch_sampler: The loader's batch sampler.
        tag (bool): Yield keys for :class:`SeededSamples`.
    """

    def __init__(self, batch_sampler, tag: bool) -> None:
        self.batch_sampler = batch_sampler
        self.tag = tag
        self.epoch = 0
        self.skip = 0

    def __len__(self) -> int:
        return max(len(self.batch_sampler) - self.skip, 0)

    def __iter__(self) -> Iterator[List]:
        it = iter(self.batch_sampler)
        position = 0
        for _ in range(self.skip):
            batch = next(it, None)
            if batch is None:
                return iter(())
            position += len(batch)
        head = next(it, None)
        if head is None:
            return iter(())
        return self._keys(itertools.chain([head], it), position)

    def _keys(self, batches, position: int) -> Iterator[List]:
        for batch in batches:
            if self.tag:
                yield [
                    (self.epoch, position + j, index)
                    for j, index in enumerate(batch)
                ]
            else:
                yield batch
            position += len(batch)


def clone_loader(
    loader: DataLoader, dataset: Dataset, batch_sampler
) -> DataLoader:
    """A DataLoader like ``loader`` over ``dataset`` and ``batch_sampler``.

    Workers, ``worker_init_fn``, collate function, pinning, timeout,
    multiprocessing context and generator are those of ``loader``.
    """
    kwargs = dict(
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        persistent_workers=loader.persistent_workers,
        pin_memory_device=loader.pin_memory_device,
    )
    if loader.num_workers > 0:
        kwargs['prefetch_factor'] = loader.prefetch_factor
    if hasattr(loader, 'in_order'):  # torch >= 2.6
        kwargs['in_order'] = loader.in_order
    return DataLoader(dataset, batch_sampler=batch_sampler, **kwargs)


class ResumableData:
    """Iterates ``loader`` epoch by epoch, optionally from a given batch.

    ``loader`` itself is never iterated (it stays what
    ``runner.train_dataloader`` returns, for hooks that read its dataset
    or set its sampler's epoch); a clone built on first use does the
    work, and is kept, so persistent workers persist.

    Args:
        loader (DataLoader): The training loader (with a batch sampler).
        sample_seeds (bool): Seed every sample's transforms from
            ``(seed, epoch, rank, position)``.
    """

    def __init__(self, loader: DataLoader, sample_seeds: bool) -> None:
        if isinstance(loader.dataset, IterableDataset) or (
            loader.batch_sampler is None
        ):
            raise TypeError(
                'mmssl train loops need a map-style dataset and a batch '
                'size (a batch sampler) to resume inside an epoch; got '
                f'{type(loader.dataset).__name__} with batch_sampler='
                f'{loader.batch_sampler}.'
            )
        self.loader = loader
        self.sample_seeds = sample_seeds
        self.batch_sampler = SkipBatchSampler(
            loader.batch_sampler, sample_seeds
        )
        self._clone: Optional[DataLoader] = None

    def __len__(self) -> int:
        return len(self.loader)

    def loaders(self) -> list:
        """The loaders that may hold worker processes: ``loader`` and the
        clone that iterates."""
        return [self.loader] + ([self._clone] if self._clone else [])

    def iterate(self, epoch: int, skip: int, seed: int, rank: int) -> Iterator:
        """An iterator over ``epoch`` that starts at batch ``skip``.

        Creating it draws the loader's base seed and starts the sampler
        (and the workers), exactly as iterating ``loader`` would.

        Args:
            epoch (int): Epoch number used in the per-sample seeds.
            skip (int): Batches of this epoch already trained on.
            seed (int): The run seed (read once, when the clone is built:
                after a resume has set it).
            rank (int): Process rank.

        Returns:
            Iterator: Batches ``skip, skip + 1, ...`` of the epoch.
        """
        self.batch_sampler.epoch = int(epoch)
        self.batch_sampler.skip = int(skip)
        if self._clone is None:
            dataset = self.loader.dataset
            if self.sample_seeds:
                dataset = SeededSamples(dataset, seed, rank)
            self._clone = clone_loader(
                self.loader, dataset, self.batch_sampler
            )
        return iter(self._clone)
