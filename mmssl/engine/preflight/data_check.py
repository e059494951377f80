"""Refuse to train when a rank would get no batch in an epoch."""

import math
from typing import Any


class TooFewSamplesError(ValueError):
    """The training set cannot fill one batch on every rank."""


def iterations_per_epoch(
    num_samples: int, world_size: int, batch_size: int, drop_last: bool
) -> int:
    """Batches each rank runs per epoch with mmengine's DefaultSampler.

    The sampler pads the dataset so every rank gets
    ``ceil(num_samples / world_size)`` indices; the batch sampler then
    drops an incomplete last batch when ``drop_last``.

    Args:
        num_samples (int): Length of the dataset.
        world_size (int): Number of processes.
        batch_size (int): Samples per process per step.
        drop_last (bool): Whether incomplete batches are dropped.

    Returns:
        int: Iterations per epoch on each rank.
    """
    if num_samples <= 0:
        return 0
    per_rank = math.ceil(num_samples / world_size)
    if drop_last:
        return per_rank // batch_size
    return math.ceil(per_rank / batch_size)


def check_train_dataloader(dataloader: Any, world_size: int) -> int:
    """Stop before training if the dataloader yields no batch per epoch.

    Zero iterations per epoch would otherwise "train" for nothing
    (epoch-based loops) or spin forever (iteration-based loops).

    Args:
        dataloader (torch.utils.data.DataLoader): The built train
            dataloader.
        world_size (int): Number of processes.

    Returns:
        int: Iterations per epoch on each rank (at least 1).

    Raises:
        TooFewSamplesError: with dataset size, world size, batch size,
            drop_last and iterations per epoch, and how to fix it.
    """
    num_samples = len(dataloader.dataset)
    batch_size = dataloader.batch_size
    batch_sampler = getattr(dataloader, 'batch_sampler', None)
    if batch_size is None and batch_sampler is not None:
        batch_size = getattr(batch_sampler, 'batch_size', 1)
    drop_last = bool(getattr(batch_sampler, 'drop_last', False))
    if num_samples == 0:
        raise TooFewSamplesError(
            'The training dataset is empty (0 samples); check '
            'train_dataloader.dataset.data_root and the file extensions.'
        )
    sampler = getattr(dataloader, 'sampler', None)
    if 'Infinite' in type(sampler).__name__:
        # an endless index stream fills batches across dataset ends
        return max(
            1,
            iterations_per_epoch(
                num_samples, world_size, batch_size, drop_last
            ),
        )
    try:
        per_rank = len(sampler)
        iters = len(dataloader)
    except TypeError:
        per_rank = math.ceil(num_samples / world_size)
        iters = iterations_per_epoch(
            num_samples, world_size, batch_size, drop_last
        )
    if iters == 0:
        raise TooFewSamplesError(
            f'The training set is too small for the batch: {num_samples} '
            f'samples over world size {world_size} give {per_rank} per '
            f'rank, fewer than batch_size={batch_size} with drop_last='
            f'{drop_last}, so there would be 0 iterations per epoch. Use '
            f'a batch size <= {per_rank} (--cfg-options '
            f'train_dataloader.batch_size={max(per_rank, 1)}), fewer '
            'processes, drop_last=False, or more data (e.g. RepeatDataset).'
        )
    return iters


def check_memory_size(model: Any, dataloader: Any) -> None:
    """Stop before training if a per-image buffer does not fit the set.

    NPID's memory bank, ODC's sample memory and DeepCluster's pseudo
    labels hold one row per training image (``model.num_samples``; the
    algorithm sets ``sized_by_dataset = True``). Too short, training
    stops at the first larger index; too long, rows that no image
    updates join the negatives and clusters.

    Raises:
        TooFewSamplesError: naming both sizes and the override to use.
    """
    model = getattr(model, 'module', model)  # DDP and friends
    if not getattr(model, 'sized_by_dataset', False):
        return
    size, num = len(dataloader.dataset), model.num_samples
    if size != num:
        raise TooFewSamplesError(
            f'model.num_samples={num}, but the training set has {size} '
            f'images: {type(model).__name__} keeps one row per training '
            "image. Set it to the set's size: --cfg-options "
            f'model.num_samples={size}'
        )
