"""Seeding data-loader workers so augmentations differ every epoch.

mmengine seeds each worker with ``seed + num_workers * rank + worker_id``
whenever a run has a seed. Workers that are not persistent are started
again every epoch with that same seed, so every epoch replays the same
stream of random augmentation parameters. PyTorch itself draws a fresh
``base_seed`` from the main process's torch generator each time a
data-loader iterator is created; mixing that with the run seed, the rank
and the worker id gives streams that differ between epochs, ranks and
workers, yet are reproducible from the run seed (and across a resume,
since the main process's RNG state is checkpointed).

:class:`mmssl.engine.runner.SSLRunner` passes :func:`seed_worker` to every
dataloader whose config names no ``worker_init_fn``; mmengine's own
default is left alone.
"""

import random
import warnings

import numpy as np
import torch


def seed_worker(
    worker_id: int,
    num_workers: int,
    rank: int,
    seed: int,
    disable_subprocess_warning: bool = False,
) -> None:
    """``worker_init_fn`` with mmengine's signature, seeded per epoch.

    Args:
        worker_id (int): Worker id in ``[0, num_workers - 1]``.
        num_workers (int): Number of workers (kept for mmengine's
            signature; the id already makes workers distinct).
        rank (int): Process rank.
        seed (int): The run's random seed.
        disable_subprocess_warning (bool): Silence warnings in every
            worker but the first.
    """
    # torch.initial_seed() in a worker is base_seed + worker_id, where
    # base_seed is drawn anew for every data-loader iterator (epoch).
    base_seed = torch.initial_seed() - worker_id
    state = np.random.SeedSequence(
        [base_seed % 2**63, seed % 2**63, rank, worker_id]
    ).generate_state(2)
    np.random.seed(int(state[0]))
    random.seed(int(state[1]))
    torch.manual_seed((int(state[0]) << 32) | int(state[1]))
    if disable_subprocess_warning and worker_id != 0:
        warnings.simplefilter('ignore')
