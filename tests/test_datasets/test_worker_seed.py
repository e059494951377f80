"""Workers draw new augmentation randomness every epoch, reproducibly."""

import numpy as np
import torch
from mmengine.dataset import worker_init_fn as mmengine_worker_init_fn
from mmengine.runner import Runner
from torch.utils.data import Dataset

from mmssl.datasets import seed_worker
from mmssl.engine.runner import SSLRunner


class _RandomDraws(Dataset):
    """Each item is a draw from numpy's global RNG, as transforms make."""

    def __len__(self):
        return 8

    def __getitem__(self, idx):
        return np.random.rand()


def _epochs(n_epochs: int, seed: int, runner=SSLRunner) -> list:
    torch.manual_seed(seed)  # the main-process RNG mmengine seeds
    loader = runner.build_dataloader(
        dict(
            dataset=_RandomDraws(),
            batch_size=4,
            num_workers=2,
            persistent_workers=False,
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='default_collate'),
        ),
        seed=seed,
    )
    draws = []
    for _ in range(n_epochs):
        draws.append(torch.cat([b for b in loader]).tolist())
    return draws


def test_runner_uses_seed_worker():
    import mmengine.runner.runner as runner_module

    # mmssl's runner passes seed_worker; mmengine's default is untouched
    assert runner_module.default_worker_init_fn is mmengine_worker_init_fn
    cfg = dict(
        dataset=_RandomDraws(),
        batch_size=4,
        num_workers=2,
        sampler=dict(type='DefaultSampler', shuffle=False),
    )
    init_fn = SSLRunner.build_dataloader(cfg, seed=5).worker_init_fn
    assert init_fn.func is seed_worker
    assert init_fn.keywords == dict(
        num_workers=2, rank=0, seed=5, disable_subprocess_warning=True
    )
    # a worker_init_fn named in the config wins; no seed, no init fn
    cfg['worker_init_fn'] = dict(type=mmengine_worker_init_fn, rank=0)
    init_fn = SSLRunner.build_dataloader(cfg, seed=5).worker_init_fn
    assert init_fn.func is mmengine_worker_init_fn
    del cfg['worker_init_fn']
    assert SSLRunner.build_dataloader(cfg, seed=None).worker_init_fn is None


def test_draws_differ_between_epochs_and_workers():
    first, second = _epochs(2, seed=0)
    assert first != second
    # items 0-3 come from worker 0, 4-7 from worker 1: distinct streams
    assert first[:4] != first[4:]


def test_same_seed_same_draws_other_seed_other_draws():
    assert _epochs(2, seed=3) == _epochs(2, seed=3)
    assert _epochs(1, seed=3) != _epochs(1, seed=4)


def test_mmengine_default_would_repeat_epochs():
    """The failure mmssl fixes: mmengine's seeding repeats each epoch."""
    first, second = _epochs(2, seed=0, runner=Runner)
    assert first == second
