import json

import numpy as np
import pytest
from torch.utils.data import Dataset

from mmssl.datasets import MixedDataset, WeightedMixSampler, epoch_indices


class _Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def _mix(sizes=(12, 50, 500), weights=(1, 1, 2)):
    return MixedDataset([_Range(n) for n in sizes], weights=weights)


def test_locate_and_weights():
    ds = _mix()
    assert len(ds) == 562
    assert ds.locate(0) == (0, 0) and ds.locate(12) == (1, 0)
    assert ds.locate(561) == (2, 499)
    np.testing.assert_allclose(ds.weights, [0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match='weights'):
        MixedDataset([_Range(3)], weights=[1, 2])


def test_shares_per_epoch_and_coverage():
    ds = _mix()
    counts = np.zeros(3)
    seen_small, seen_big = set(), []
    for epoch in range(4):
        idx = epoch_indices(ds.sizes, ds.weights, 400, seed=3, epoch=epoch)
        assert len(idx) == 400
        k = np.searchsorted(ds.cumulative, idx, side='right') - 1
        c = np.bincount(k, minlength=3)
        np.testing.assert_array_equal(c, [100, 100, 200])  # exact shares
        counts += c
        if epoch < 2:  # positions 0..399 of the first pass over 500
            seen_big += idx[k == 2].tolist()
        seen_small.update(idx[k == 0].tolist())
    assert seen_small == set(range(12))  # small set cycled through
    assert len(set(seen_big)) == 400  # big set: no repeats within a pass


def test_deterministic_and_epoch_dependent():
    a = epoch_indices([10, 20], [1, 1], 30, seed=0, epoch=2)
    b = epoch_indices([10, 20], [1, 1], 30, seed=0, epoch=2)
    c = epoch_indices([10, 20], [1, 1], 30, seed=0, epoch=3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_sampler_rank_disjoint_and_resume(monkeypatch):
    ds = _mix((100, 200, 500))
    shards = []
    for rank in range(3):
        monkeypatch.setattr(
            'mmssl.datasets.mixed.get_dist_info', lambda r=rank: (r, 3)
        )
        s = WeightedMixSampler(ds, epoch_length=300, seed=5)
        s.set_epoch(1)
        shards.append(list(s))
        assert len(s) == 100
    flat = sum(shards, [])
    full = s.epoch_indices().tolist()
    assert len(full) == 300
    for rank in range(3):  # each rank gets its own positions of one list
        assert shards[rank] == full[rank::3]
    # one process with the whole epoch sees the same union
    monkeypatch.setattr('mmssl.datasets.mixed.get_dist_info', lambda: (0, 1))
    single = WeightedMixSampler(ds, epoch_length=300, seed=5)
    single.set_epoch(1)
    assert sorted(single) == sorted(flat)


def _sampler(monkeypatch, ds, rank, world, seed=5):
    monkeypatch.setattr(
        'mmssl.datasets.mixed.get_dist_info', lambda: (rank, world)
    )
    return WeightedMixSampler(ds, epoch_length=300, seed=seed)


def test_sampler_mid_epoch_restore(monkeypatch):
    """Take 70 indices of epoch 1, save the state (as JSON), build a fresh
    sampler with another seed, load the state: it yields exactly the rest
    of the uninterrupted epoch, then whole epochs again."""
    ds = _mix((100, 200, 500))
    full = _sampler(monkeypatch, ds, 0, 1)
    full.set_epoch(1)
    epoch1 = list(full)
    full.set_epoch(2)
    epoch2 = list(full)
    s = _sampler(monkeypatch, ds, 0, 1)
    s.set_epoch(1)
    it = iter(s)
    taken = [next(it) for _ in range(70)]
    state = json.loads(json.dumps(s.state_dict()))
    assert state['position'] == 70 and state['epoch'] == 1
    fresh = _sampler(monkeypatch, ds, 0, 1, seed=None)
    fresh.load_state_dict(state)
    fresh.set_epoch(1)  # what DistSamplerSeedHook does before the epoch
    rest = list(fresh)
    assert taken + rest == epoch1 and len(rest) == 230
    assert list(fresh) == epoch1  # the restore applied once
    fresh.set_epoch(2)
    assert list(fresh) == epoch2
    # a state for other data is refused
    other = _sampler(monkeypatch, _mix((100, 200, 501)), 0, 1)
    with pytest.raises(ValueError, match='epoch lists differ'):
        other.load_state_dict(state)


def test_sampler_restore_with_another_world_size(monkeypatch):
    """3 ranks stop after 21 samples each; 2 ranks continue: together
    they yield exactly positions 63..299 of the epoch's list."""
    ds = _mix((100, 200, 500))
    whole = _sampler(monkeypatch, ds, 0, 1)
    whole.set_epoch(1)
    epoch1 = list(whole)
    states = []
    for rank in range(3):
        s = _sampler(monkeypatch, ds, rank, 3)
        s.set_epoch(1)
        it = iter(s)
        for _ in range(21):
            next(it)
        states.append(s.state_dict())
    assert [st['position'] for st in states] == [63] * 3
    rest = []
    for rank in range(2):
        s = _sampler(monkeypatch, ds, rank, 2, seed=0)
        s.load_state_dict(states[0])
        rest.append(list(s))
    assert rest[0] == epoch1[64::2] and rest[1] == epoch1[63::2]
    # explicit count from the training loop (workers read ahead)
    assert s.state_dict(consumed=5)['position'] == 10


def test_mixed_sets_source_metainfo(messy_root, tmp_path):
    import cv2

    cv2.imwrite(str(tmp_path / 'x.png'), np.zeros((8, 8, 3), np.uint8))
    pipe = [dict(type='LoadImageRobust'), dict(type='PackInputs')]
    ds = MixedDataset(
        [
            dict(
                type='ImageFolderDataset',
                data_root=messy_root[0],
                pipeline=pipe,
                max_bad_ratio=1.0,
            ),
            dict(
                type='ImageFolderDataset',
                data_root=str(tmp_path),
                pipeline=pipe,
            ),
        ],
        weights=[1, 1],
    )
    assert ds[len(ds) - 1]['data_samples'].source == 1
    assert ds[0]['data_samples'].source == 0
