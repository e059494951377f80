"""Skipping consumed batches unloaded; per-sample seeds; RNG helpers."""

import random

import numpy as np
import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset

from mmssl.checkpoint import torch_load_safe
from mmssl.engine.resume.data import (
    ResumableData,
    SeededSamples,
    SkipBatchSampler,
)
from mmssl.engine.resume.rng import (
    _EPOCH_TAG,
    _SAMPLE_TAG,
    derive_seeds,
    fork_rng,
    get_rng_state,
    seed_epoch,
    seed_sample,
    set_rng_state,
)


class _Draws(Dataset):
    """Item i: (i, a draw from numpy's, python's and torch's global RNG);
    records every index it is asked for."""

    def __init__(self, n: int = 10) -> None:
        self.n = n
        self.loaded = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx):
        self.loaded.append(idx)
        return (
            idx,
            float(np.random.rand()),
            random.random(),
            float(torch.rand(())),
        )


def _loader(dataset, batch_size=3, drop_last=False) -> DataLoader:
    sampler = torch.utils.data.SequentialSampler(dataset)
    return DataLoader(
        dataset,
        batch_sampler=BatchSampler(sampler, batch_size, drop_last),
        collate_fn=list,
    )


def test_skip_batch_sampler_drops_leading_batches_only():
    inner = BatchSampler(range(10), 3, drop_last=False)
    sampler = SkipBatchSampler(inner, tag=False)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    sampler.skip = 2
    assert len(sampler) == 2
    assert list(sampler) == [[6, 7, 8], [9]]
    sampler.skip = 5
    assert list(sampler) == [] and len(sampler) == 0


def test_skip_batch_sampler_tags_positions_of_the_whole_epoch():
    inner = BatchSampler([7, 7, 3, 5, 1], 2, drop_last=False)
    sampler = SkipBatchSampler(inner, tag=True)
    sampler.epoch, sampler.skip = 4, 1
    # a repeated index gets distinct positions; skipped ones count
    assert list(sampler) == [[(4, 2, 3), (4, 3, 5)], [(4, 4, 1)]]


def test_resumed_epoch_loads_no_skipped_sample_and_matches():
    full_set, part_set = _Draws(), _Draws()
    full = ResumableData(_loader(full_set), sample_seeds=True)
    part = ResumableData(_loader(part_set), sample_seeds=True)
    straight = list(full.iterate(epoch=1, skip=0, seed=5, rank=0))
    torch.rand(3), np.random.rand(), random.random()  # unrelated draws
    resumed = list(part.iterate(epoch=1, skip=2, seed=5, rank=0))
    assert part_set.loaded == [6, 7, 8, 9]  # batches 0-1 never loaded
    assert resumed == straight[2:]  # same samples, same random draws


def test_sample_seeds_depend_on_seed_epoch_rank_not_global_state():
    def epoch(seed=5, epoch=1, rank=0):
        data = ResumableData(_loader(_Draws(4), 4), sample_seeds=True)
        return list(data.iterate(epoch, 0, seed, rank))[0]

    torch.manual_seed(0)
    base = epoch()
    torch.manual_seed(1), np.random.seed(1), random.seed(1)
    assert epoch() == base
    for other in (epoch(seed=6), epoch(epoch=2), epoch(rank=1)):
        assert [s[1:] for s in other] != [s[1:] for s in base]
    # items of one epoch differ from each other
    assert len({s[1] for s in base}) == 4


def test_sample_seeding_leaves_training_process_rng_alone():
    data = ResumableData(_loader(_Draws(6)), sample_seeds=True)
    state = get_rng_state()
    list(data.iterate(0, 0, 0, 0))
    after = get_rng_state()
    assert after['python'] == state['python']
    assert torch.equal(after['numpy']['key'], state['numpy']['key'])
    assert after['numpy']['pos'] == state['numpy']['pos']
    # the loader draws its base seed from torch's generator, as usual
    set_rng_state(state)
    torch.empty((), dtype=torch.int64).random_()
    assert torch.equal(after['torch'], torch.get_rng_state())


def test_without_sample_seeds_items_come_from_the_global_stream():
    dataset = _Draws(3)
    data = ResumableData(_loader(dataset), sample_seeds=False)
    np.random.seed(11)
    expected = np.random.rand()
    np.random.seed(11)
    assert list(data.iterate(0, 0, 0, 0))[0][0][1] == expected


def test_seeded_samples_getitem_equals_batched_load():
    dataset = SeededSamples(_Draws(5), seed=1, rank=0)
    assert dataset[(0, 3, 2)] == dataset.__getitems__([(0, 3, 2)])[0]
    assert dataset[(0, 3, 2)] != dataset[(0, 4, 2)]


def test_iterable_or_unbatched_loader_is_refused():
    with pytest.raises(TypeError, match='batch size'):
        ResumableData(DataLoader(_Draws(), batch_size=None), True)


def test_seed_epoch_is_a_function_of_its_arguments():
    def draws(*args):
        seed_epoch(*args)
        return (random.random(), np.random.rand(), torch.rand(2).tolist())

    assert draws(0, 3, 1) == draws(0, 3, 1)
    assert draws(0, 3, 1) != draws(0, 4, 1) != draws(0, 3, 0)
    assert draws(0, 3, 1) != draws(1, 3, 1)


def test_rng_state_roundtrip_through_safe_loader(tmp_path):
    np.random.normal()  # leave a cached gaussian in numpy's state
    state = get_rng_state()
    expected = (random.random(), np.random.rand(3), torch.rand(3))
    path = str(tmp_path / 'rng.pth')
    torch.save({'rng': state}, path)
    random.random(), np.random.rand(7), torch.rand(5)  # move on
    set_rng_state(torch_load_safe(path)['rng'])  # weights-only load
    again = (random.random(), np.random.rand(3), torch.rand(3))
    assert again[0] == expected[0]
    np.testing.assert_array_equal(again[1], expected[1])
    assert torch.equal(again[2], expected[2])


def test_derived_seeds_are_pinned():
    """BLAKE2b-160 of b'1,2,3', cut 8/4/8 bytes, little-endian. Pinned: a
    change would silently change every resumed run's randomness."""
    assert derive_seeds((1, 2, 3)) == (
        8775177521611187226,
        1826375595,
        9372196352831362264,
    )
    assert derive_seeds([0]) == (
        9594690010396198489,
        1133997876,
        6924406183821050656,
    )


def _draws():
    return (random.random(), np.random.rand(), torch.rand(2).tolist())


def _seeded_draws(seeds):
    random.seed(seeds[0])
    np.random.seed(seeds[1])
    torch.manual_seed(seeds[2])
    return _draws()


def test_epoch_and_sample_seeds_reach_each_generator(monkeypatch):
    """Python, numpy and torch each get their own derived seed; only the
    epoch seed goes to every device (``torch.manual_seed``), a sample
    seed to the CPU generator alone."""
    all_devices, real_manual_seed = [], torch.manual_seed

    def spy(seed):  # not torch.cuda's: a forked process skips that one
        all_devices.append(seed)
        return real_manual_seed(seed)

    monkeypatch.setattr(torch, 'manual_seed', spy)
    seed_sample(7, 2, 1, 5)
    got = _draws()
    assert all_devices == []
    assert got == _seeded_draws(derive_seeds((7, _SAMPLE_TAG, 2, 1, 5)))
    seed_epoch(7, 2, 1)
    got = _draws()
    epoch_seeds = derive_seeds((7, _EPOCH_TAG, 2, 1))
    assert all_devices[1:] == [epoch_seeds[2]]  # [0]: _seeded_draws
    assert got == _seeded_draws(epoch_seeds)


def test_numpy_key_is_saved_as_int64():
    """int64, not uint32: loads with any torch and any op."""
    state = get_rng_state()
    assert state['numpy']['key'].dtype == torch.int64
    np.testing.assert_array_equal(
        state['numpy']['key'].numpy(), np.random.get_state()[1]
    )


def test_fork_rng_restores_every_state():
    state = get_rng_state()
    with pytest.raises(ValueError):
        with fork_rng():
            _draws()
            raise ValueError
    after = _draws()
    set_rng_state(state)
    assert after == _draws()


def test_cuda_states_with_a_fake_device(monkeypatch):
    """CUDA states are saved once CUDA is initialised and restored per
    device; with another device count, seeded from the first state."""
    cuda = torch.cuda
    states = [torch.arange(16, dtype=torch.uint8), torch.arange(16, 32)]
    calls = []
    monkeypatch.setattr(cuda, 'is_available', lambda: True)
    monkeypatch.setattr(cuda, 'is_initialized', lambda: False)
    monkeypatch.setattr(cuda, 'get_rng_state_all', lambda: states)
    assert 'cuda' not in get_rng_state()
    monkeypatch.setattr(cuda, 'is_initialized', lambda: True)
    state = get_rng_state()
    assert state['cuda'] is states
    monkeypatch.setattr(cuda, 'set_rng_state_all', calls.append)
    monkeypatch.setattr(cuda, 'manual_seed_all', calls.append)
    monkeypatch.setattr(cuda, 'device_count', lambda: 2)
    set_rng_state(state)
    assert len(calls) == 1 and len(calls[0]) == 2
    assert all(map(torch.equal, calls[0], states))
    calls.clear()
    monkeypatch.setattr(cuda, 'device_count', lambda: 1)
    set_rng_state(state)
    assert calls == [0 + 1 + 2 + 3 + 4 + 5 + 6 + 7]  # first 8 bytes
    calls.clear()
    set_rng_state({k: v for k, v in state.items() if k != 'cuda'})
    monkeypatch.setattr(cuda, 'is_available', lambda: False)
    set_rng_state(state)  # a GPU checkpoint resumed on a CPU machine
    assert calls == []
