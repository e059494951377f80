"""Several datasets mixed with sampling weights, deterministic per epoch."""

import math
from typing import Iterator, List, Optional, Sequence, Union

import numpy as np
from mmengine.dataset import BaseDataset
from mmengine.dist import get_dist_info, sync_random_seed
from torch.utils.data import Dataset, Sampler

from mmssl.registry import DATA_SAMPLERS, DATASETS


@DATASETS.register_module()
class MixedDataset(Dataset):
    """Concatenation of datasets that carries their sampling weights.

    Index ``i`` addresses the concatenation (dataset 0 first). Samples get
    ``source`` (the dataset's position) in their metainfo. The weights are
    used by :class:`WeightedMixSampler`, which gives each dataset its share
    of every epoch; with another sampler this is a plain concatenation.

    Example (five eye datasets of 1.2k to 50k images, equal shares)::

        dataset=dict(type='MixedDataset', weights=[1, 1, 1, 1, 1],
                     datasets=[dict(type='ImageFolderDataset',
                                    data_root=r, pipeline=pipeline)
                               for r in roots])
        sampler=dict(type='WeightedMixSampler', epoch_length=50000)

    Args:
        datasets (list[dict | Dataset]): The datasets.
        weights (Sequence[float], optional): Relative share of each dataset
            in an epoch. ``None`` means proportional to size (i.e. a
            plain concatenation).
    """

    def __init__(
        self,
        datasets: Sequence[Union[dict, Dataset]],
        weights: Optional[Sequence[float]] = None,
    ) -> None:
        if not datasets:
            raise ValueError('MixedDataset needs at least one dataset.')
        self.datasets = [
            DATASETS.build(d) if isinstance(d, dict) else d for d in datasets
        ]
        self.sizes = np.array([len(d) for d in self.datasets], np.int64)
        if (self.sizes == 0).any():
            raise ValueError(
                f'MixedDataset: dataset(s) '
                f'{np.flatnonzero(self.sizes == 0).tolist()} '
                'are empty.'
            )
        if weights is None:
            weights = self.sizes.astype(float)
        weights = np.asarray(weights, float)
        if (
            len(weights) != len(self.datasets)
            or (weights < 0).any()
            or weights.sum() <= 0
        ):
            raise ValueError(
                f'weights must be {len(self.datasets)} non-negative numbers '
                f'with a positive sum, got {weights.tolist()}.'
            )
        self.weights = weights / weights.sum()
        self.cumulative = np.concatenate([[0], np.cumsum(self.sizes)])

    @property
    def metainfo(self) -> dict:
        meta = getattr(self.datasets[0], 'metainfo', None)
        return dict(meta) if meta else {}

    def full_init(self) -> None:
        for d in self.datasets:
            if isinstance(d, BaseDataset):
                d.full_init()

    def __len__(self) -> int:
        return int(self.cumulative[-1])

    def locate(self, idx: int):
        """(dataset position, index inside it) of a global index."""
        k = int(np.searchsorted(self.cumulative, idx, side='right') - 1)
        return k, int(idx - self.cumulative[k])

    def __getitem__(self, idx: int) -> dict:
        k, i = self.locate(idx)
        data = self.datasets[k][i]
        if isinstance(data, dict) and hasattr(
            data.get('data_samples'), 'set_metainfo'
        ):
            data['data_samples'].set_metainfo(dict(source=k))
        return data


def epoch_indices(
    sizes: Sequence[int],
    weights: Sequence[float],
    epoch_length: int,
    seed: int,
    epoch: int,
    shuffle: bool = True,
) -> np.ndarray:
    """Global indices of one epoch of a weighted mix (deterministic).

    Dataset ``k`` gets ``n_k`` samples (largest-remainder rounding of
    ``weights[k] * epoch_length``). They are read from an endless stream
    made of successive random permutations of that dataset (cycle ``c``
    seeded by ``(seed, k, c)``): epoch ``e`` takes positions
    ``[e * n_k, (e + 1) * n_k)``. So a large dataset is walked through
    without repeats over several epochs, a small one is repeated, and the
    result depends only on ``(seed, epoch)``: every rank computes the same
    list and a resumed run gets the same samples.
    """
    sizes = np.asarray(sizes, np.int64)
    w = np.asarray(weights, float)
    w = w / w.sum()
    exact = w * epoch_length
    counts = np.floor(exact).astype(np.int64)
    rest = epoch_length - counts.sum()
    if rest > 0:
        counts[np.argsort(-(exact - counts), kind='stable')[:rest]] += 1
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    parts = []
    for k, (n_k, size) in enumerate(zip(counts, sizes)):
        if n_k == 0:
            continue
        start = epoch * n_k
        stop = start + n_k
        local = []
        for c in range(start // size, (stop - 1) // size + 1):
            if shuffle:
                perm = np.random.default_rng([seed, k, c]).permutation(size)
            else:
                perm = np.arange(size)
            lo = max(start - c * size, 0)
            hi = min(stop - c * size, size)
            local.append(perm[lo:hi])
        parts.append(np.concatenate(local) + offsets[k])
    idx = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if shuffle:
        idx = idx[np.random.default_rng([seed, epoch]).permutation(len(idx))]
    return idx


@DATA_SAMPLERS.register_module()
class WeightedMixSampler(Sampler):
    """Distributed sampler giving each dataset of a mix its epoch share.

    Works with :class:`MixedDataset` (reads ``sizes`` and ``weights``); on
    any other dataset it samples uniformly. Each epoch's list is
    :func:`epoch_indices` ``(seed, epoch)``, padded (by repeating its
    start) to a multiple of the world size and split ``rank::world_size``,
    so ranks get disjoint shares of equal length. mmengine's train loop
    and ``DistSamplerSeedHook`` call :meth:`set_epoch` before each epoch,
    so resuming at epoch ``e`` reproduces epoch ``e``.

    Mid-epoch restore: :meth:`state_dict` holds the seed, the epoch and
    the number of positions of the epoch's list already handed out (over
    all ranks); a fresh sampler given it by :meth:`load_state_dict`
    yields exactly the rest of that epoch (also with another world size),
    then whole epochs again. The count is what this sampler's iterator
    has yielded: a ``DataLoader`` with workers reads ahead of the
    training step, so when restoring a training position pass
    ``consumed=iterations_done_in_epoch * batch_size`` (per rank) to
    :meth:`state_dict`.

    Args:
        dataset (Dataset): Usually a :class:`MixedDataset`.
        epoch_length (int, optional): Samples per epoch over all ranks.
            Defaults to ``len(dataset)``.
        shuffle (bool): Defaults to True.
        seed (int, optional): Shared seed; ``None`` draws one and syncs it
            across ranks.
        round_up (bool): Pad to a multiple of the world size (True) or
            drop the tail (False). Defaults to True.
    """

    def __init__(
        self,
        dataset: Dataset,
        epoch_length: Optional[int] = None,
        shuffle: bool = True,
        seed: Optional[int] = None,
        round_up: bool = True,
    ) -> None:
        rank, world_size = get_dist_info()
        self.rank, self.world_size = rank, world_size
        self.dataset = dataset
        self.sizes = list(getattr(dataset, 'sizes', [len(dataset)]))
        self.weights = list(getattr(dataset, 'weights', [1.0]))
        self.epoch_length = int(epoch_length or len(dataset))
        if self.epoch_length < 1:
            raise ValueError(f'epoch_length must be >= 1, got {epoch_length}.')
        self.shuffle = shuffle
        self.seed = sync_random_seed() if seed is None else int(seed)
        self.round_up = round_up
        self.epoch = 0
        self._start = 0  # this rank's first position on the next __iter__
        self._consumed = 0  # positions the current iterator has yielded
        if round_up:
            self.num_samples = math.ceil(self.epoch_length / world_size)
        else:
            self.num_samples = self.epoch_length // world_size
        self.total_size = self.num_samples * world_size

    def epoch_indices(self) -> np.ndarray:
        """This epoch's indices over all ranks (before sharding)."""
        idx = epoch_indices(
            self.sizes,
            self.weights,
            self.epoch_length,
            self.seed,
            self.epoch,
            self.shuffle,
        )
        if self.round_up and len(idx) < self.total_size:
            reps = math.ceil(self.total_size / len(idx))
            idx = np.tile(idx, reps)[: self.total_size]
        return idx[: self.total_size]

    def __iter__(self) -> Iterator[int]:
        idx = self.epoch_indices()[
            self.rank : self.total_size : self.world_size
        ]
        start, self._start = self._start, 0  # a restore applies once
        self._consumed = start
        for i in idx[start:].tolist():
            self._consumed += 1
            yield i

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch; another epoch than a restored one starts at
        its beginning."""
        if int(epoch) != self.epoch:
            self._start = 0
        self.epoch = int(epoch)

    def state_dict(self, consumed: Optional[int] = None) -> dict:
        """Where this epoch stands (plain ints, JSON-safe).

        Args:
            consumed (int, optional): Samples of this epoch this rank has
                used; defaults to what the current iterator yielded. All
                ranks are assumed to be at the same count.

        Returns:
            dict: ``seed``, ``epoch``, ``position`` (positions of the
            epoch's list used over all ranks), ``epoch_length``, ``sizes``.
        """
        local = self._consumed if consumed is None else int(consumed)
        return dict(
            seed=self.seed,
            epoch=self.epoch,
            position=min(local * self.world_size, self.total_size),
            epoch_length=self.epoch_length,
            sizes=[int(n) for n in self.sizes],
        )

    def load_state_dict(self, state: dict) -> None:
        """Continue the epoch of ``state`` where it stopped."""
        mine = dict(epoch_length=self.epoch_length, sizes=list(self.sizes))
        theirs = {k: state.get(k) for k in mine}
        if theirs != mine:
            raise ValueError(
                f'Sampler state was saved for {theirs}, this sampler has '
                f'{mine}: the epoch lists differ, so the position cannot '
                'be restored.'
            )
        self.seed = int(state['seed'])
        self.epoch = int(state['epoch'])
        # positions p < position with p % world_size == rank are done
        self._start = max(
            0, -(-(int(state['position']) - self.rank) // self.world_size)
        )
        self._consumed = self._start

    def shares(self) -> List[float]:
        """Expected share of each dataset in an epoch."""
        return list(np.asarray(self.weights) / np.sum(self.weights))
