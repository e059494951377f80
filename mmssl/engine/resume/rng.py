"""Saving, restoring and deriving the random states of a training process.

Everything :func:`get_rng_state` returns is a builtin or a tensor, so it
loads under weights-only unpickling without widening mmssl's allowlist.

Seeds are derived by hashing a list of integers (the run seed, the epoch,
the rank, a position) with BLAKE2b: neighbouring epochs or samples get
unrelated seeds, at a few microseconds per derivation (numpy's
``SeedSequence`` mixes as well but costs about ten times more, which
counts when every sample is seeded).
"""

import contextlib
import hashlib
import random
from typing import Any, Dict, Iterator, Sequence, Tuple

import numpy as np
import torch

# Tags that keep the epoch stream and the per-sample streams apart even
# for equal numbers (epoch 3 vs sample position 3).
_EPOCH_TAG = 0x45504F43  # 'EPOC'
_SAMPLE_TAG = 0x53414D50  # 'SAMP'


def get_rng_state() -> Dict[str, Any]:
    """Capture python ``random``, numpy, torch CPU and CUDA RNG states.

    Returns:
        dict: Keys ``python``, ``numpy``, ``torch`` and, once CUDA is
        initialised, ``cuda`` (one ByteTensor per device).
    """
    name, key, pos, has_gauss, gauss = np.random.get_state()
    state = dict(
        python=random.getstate(),
        numpy=dict(
            bit_generator=str(name),
            key=torch.from_numpy(np.asarray(key, dtype=np.int64)),
            pos=int(pos),
            has_gauss=int(has_gauss),
            gauss=float(gauss),
        ),
        torch=torch.get_rng_state(),
    )
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    """Restore states captured by :func:`get_rng_state`.

    Args:
        state (dict): Output of :func:`get_rng_state`, possibly after a
            save/load round trip.
    """
    py = state['python']
    # Pickle round trips may turn the inner tuple into a list.
    random.setstate((py[0], tuple(py[1]), py[2]))
    npy = state['numpy']
    np.random.set_state(
        (
            npy['bit_generator'],
            npy['key'].numpy().astype(np.uint32),
            npy['pos'],
            npy['has_gauss'],
            npy['gauss'],
        )
    )
    torch.set_rng_state(state['torch'].cpu())
    cuda = state.get('cuda')
    if cuda is not None and torch.cuda.is_available():
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all([s.cpu() for s in cuda])
        else:  # another device count: a reproducible stand-in
            torch.cuda.manual_seed_all(int(cuda[0][:8].sum()))


def derive_seeds(entropy: Sequence[int]) -> Tuple[int, int, int]:
    """Three independent seeds hashed from a list of integers.

    Args:
        entropy (Sequence[int]): Integers, e.g. ``(seed, epoch, rank)``.

    Returns:
        tuple[int, int, int]: Seeds for python ``random`` (64 bit), numpy
        (32 bit) and torch (64 bit).
    """
    text = ','.join(str(int(x)) for x in entropy).encode()
    digest = hashlib.blake2b(text, digest_size=20).digest()
    return (
        int.from_bytes(digest[:8], 'little'),
        int.from_bytes(digest[8:12], 'little'),
        int.from_bytes(digest[12:20], 'little'),
    )


def _seed_all(seeds: Tuple[int, int, int], cuda: bool) -> None:
    random.seed(seeds[0])
    np.random.seed(seeds[1])
    torch_seed = seeds[2]
    if cuda:
        torch.manual_seed(torch_seed)  # CPU and every CUDA device
    else:
        torch.random.default_generator.manual_seed(torch_seed)


def seed_epoch(seed: int, epoch: int, rank: int) -> None:
    """Re-seed python, numpy, torch (CPU and CUDA) for one epoch.

    Called by mmssl's train loops when an epoch starts, so the training
    randomness of epoch ``epoch`` does not depend on what ran before it
    (validation, clustering, a kNN evaluation, a resume).

    Args:
        seed (int): The run seed (``runner.seed``).
        epoch (int): 0-based epoch (the data epoch in iteration loops).
        rank (int): Process rank.
    """
    _seed_all(derive_seeds((seed, _EPOCH_TAG, epoch, rank)), cuda=True)


def seed_sample(seed: int, epoch: int, rank: int, position: int) -> None:
    """Seed python, numpy and torch CPU for one sample's transforms.

    Args:
        seed (int): The run seed.
        epoch (int): 0-based data epoch.
        rank (int): Process rank.
        position (int): Position of the sample in this rank's epoch
            stream (0, 1, 2, ...), unique even when a sampler repeats an
            index.
    """
    _seed_all(
        derive_seeds((seed, _SAMPLE_TAG, epoch, rank, position)), cuda=False
    )


@contextlib.contextmanager
def fork_cpu_rng() -> Iterator[None]:
    """Run a block, then put python, numpy and torch CPU states back.

    Cheaper than :func:`fork_rng` (no CUDA states), for the per-sample
    seeding that runs in the training process when a loader has no
    workers.
    """
    py = random.getstate()
    npy = np.random.get_state()
    cpu = torch.random.default_generator.get_state()
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)
        torch.random.default_generator.set_state(cpu)


@contextlib.contextmanager
def fork_rng() -> Iterator[None]:
    """Run a block, then restore every state :func:`get_rng_state` sees.

    The train loops run validation inside it, so evaluating never shifts
    the training randomness.
    """
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
