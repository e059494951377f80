# Copyright (c) mmssl contributors. All rights reserved.
"""A stratified subset of a labelled dataset: few-label fine-tuning
(1 % / 10 % of the labels, as the semi-supervised ImageNet protocol of
Chen et al., 2020, `SimCLR <https://arxiv.org/abs/2002.05709>`_ and the
DINO papers) and a held-out split carved from train, on which
hyper-parameters such as the linear probe's learning rate are chosen, so
that the test split is never used to choose."""

import copy
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from mmengine.logging import print_log

from mmssl.registry import DATASETS

PARTS = ('train', 'holdout')


def _class_count(n: int, fraction: Optional[float], per_class) -> int:
    if per_class is not None:
        return int(per_class)
    if fraction is None:
        return n
    return max(1, int(round(fraction * n)))


def select_label_subset(
    labels: Sequence[int],
    fraction: Optional[float] = None,
    per_class: Optional[int] = None,
    holdout: float = 0.0,
    seed: int = 0,
) -> Tuple[List[int], List[int]]:
    """Indices of a per-class stratified subset and of a held-out split.

    For each class (in increasing label order) its indices are shuffled
    by one ``numpy`` generator seeded with ``seed``; the first
    ``round(holdout * n_c)`` go to the held-out split (at least one when
    ``holdout > 0``, and at least one is left), and of the rest the first
    ``per_class``, or ``max(1, round(fraction * n_c))`` (``n_c`` the whole
    class), go to the subset. The two never overlap and depend only on
    the labels and the seed.

    Args:
        labels (Sequence[int]): The label of every sample.
        fraction (float, optional): Share of each class kept, in (0, 1].
            None with ``per_class`` None keeps every non-held-out sample.
        per_class (int, optional): Samples kept per class (instead of
            ``fraction``).
        holdout (float): Share of each class held out, in [0, 1).
        seed (int): Seed of the selection. Defaults to 0.

    Returns:
        tuple[list[int], list[int]]: Subset and held-out indices, sorted.

    Raises:
        ValueError: Bad arguments, or a class with fewer samples than
            asked for.
    """
    if fraction is not None and per_class is not None:
        raise ValueError('Give fraction or per_class, not both.')
    if fraction is not None and not 0 < fraction <= 1:
        raise ValueError(f'fraction must be in (0, 1], got {fraction}.')
    if per_class is not None and per_class < 1:
        raise ValueError(f'per_class must be >= 1, got {per_class}.')
    if not 0 <= holdout < 1:
        raise ValueError(f'holdout must be in [0, 1), got {holdout}.')
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    keep, held = [], []
    for label in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == label))
        n = len(idx)
        h = int(round(holdout * n))
        h = min(max(h, 1), n - 1) if holdout > 0 else 0
        k = _class_count(n, fraction, per_class)
        k = n - h if fraction is None and per_class is None else k
        if h + k > n:
            raise ValueError(
                f'Class {label} has {n} samples: too few for {k} kept and '
                f'{h} held out.'
            )
        held.extend(idx[:h].tolist())
        keep.extend(idx[h : h + k].tolist())
    return sorted(keep), sorted(held)


@DATASETS.register_module()
class LabelSubset:
    """The stratified subset or the held-out split of a labelled dataset.

    Example (10 % of the labels; 10 % of train held out to choose the
    learning rate on, the rest for training)::

        train=dict(type='LabelSubset', dataset=folder, fraction=0.1)
        fit=dict(type='LabelSubset', dataset=folder, holdout=0.1)
        choose=dict(type='LabelSubset', dataset=folder, holdout=0.1,
                    part='holdout')

    Args:
        dataset (dict | Dataset): The labelled dataset (``CustomDataset``,
            ``ImageFolderDataset(with_label=True)``, ...): it must give
            ``get_gt_labels()`` or a ``gt_label`` per data info.
        fraction, per_class, holdout, seed: See
            :func:`select_label_subset`.
        part (str): ``'train'`` (the subset) or ``'holdout'`` (the
            held-out split). Defaults to ``'train'``.
    """

    def __init__(
        self,
        dataset: Union[dict, object],
        fraction: Optional[float] = None,
        per_class: Optional[int] = None,
        holdout: float = 0.0,
        seed: int = 0,
        part: str = 'train',
    ) -> None:
        if part not in PARTS:
            raise ValueError(f'part must be one of {PARTS}, got {part!r}.')
        if part == 'holdout' and holdout <= 0:
            raise ValueError("part='holdout' needs holdout > 0.")
        if isinstance(dataset, dict):
            dataset = DATASETS.build(dataset)
        self.dataset = dataset
        labels = self._all_labels = self._labels()
        keep, held = select_label_subset(
            labels, fraction, per_class, holdout, seed
        )
        self.indices = keep if part == 'train' else held
        if not self.indices:
            raise ValueError(f'LabelSubset: the {part} part is empty.')
        print_log(
            f'LabelSubset: {part} part, {len(self.indices)} of '
            f'{len(labels)} samples ({len(np.unique(labels))} classes, '
            f'fraction={fraction}, per_class={per_class}, holdout='
            f'{holdout}, seed={seed}).',
            logger='current',
        )

    def _labels(self) -> np.ndarray:
        if hasattr(self.dataset, 'get_gt_labels'):
            return np.asarray(self.dataset.get_gt_labels())
        infos = [
            self.dataset.get_data_info(i) for i in range(len(self.dataset))
        ]
        if not infos or 'gt_label' not in infos[0]:
            raise ValueError(
                f'LabelSubset needs labels: {type(self.dataset).__name__} '
                'gives no gt_label (an ImageFolderDataset needs '
                'with_label=True).'
            )
        return np.asarray([int(i['gt_label']) for i in infos])

    @property
    def metainfo(self) -> dict:
        return copy.deepcopy(self.dataset.metainfo)

    def get_data_info(self, idx: int) -> dict:
        return self.dataset.get_data_info(self.indices[idx])

    def get_gt_labels(self) -> np.ndarray:
        return self._all_labels[self.indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, idx: int):
        return self.dataset[self.indices[idx]]


__all__ = ['LabelSubset', 'select_label_subset']
