"""LabelSubset: exact per-class counts, stratified, deterministic, and a
held-out split disjoint from the subset."""

from collections import Counter

import numpy as np
import pytest

from mmssl.datasets import LabelSubset, select_label_subset
from mmssl.registry import DATASETS

# 3 classes of 100, 40 and 7 samples, interleaved
LABELS = [0] * 100 + [1] * 40 + [2] * 7
LABELS = [LABELS[i] for i in np.random.default_rng(5).permutation(147)]


def counts(indices):
    return Counter(LABELS[i] for i in indices)


def test_fraction_is_exact_per_class():
    keep, held = select_label_subset(LABELS, fraction=0.1)
    # round(0.1 * n) per class, at least one
    assert counts(keep) == {0: 10, 1: 4, 2: 1}
    assert held == []
    keep, _ = select_label_subset(LABELS, fraction=0.01)
    assert counts(keep) == {0: 1, 1: 1, 2: 1}
    keep, _ = select_label_subset(LABELS, per_class=5)
    assert counts(keep) == {0: 5, 1: 5, 2: 5}


def test_holdout_is_disjoint_and_exact():
    keep, held = select_label_subset(LABELS, holdout=0.2)
    assert counts(held) == {0: 20, 1: 8, 2: 1}  # round(1.4) = 1
    assert counts(keep) == {0: 80, 1: 32, 2: 6}
    assert not set(keep) & set(held)
    assert sorted(keep + held) == list(range(len(LABELS)))
    keep, held2 = select_label_subset(LABELS, fraction=0.1, holdout=0.2)
    assert held2 == held  # the subset is drawn from what is not held out
    assert not set(keep) & set(held)


def test_seed_decides_and_only_the_seed():
    a = select_label_subset(LABELS, fraction=0.1, holdout=0.1, seed=0)
    b = select_label_subset(LABELS, fraction=0.1, holdout=0.1, seed=0)
    c = select_label_subset(LABELS, fraction=0.1, holdout=0.1, seed=1)
    assert a == b and a != c


@pytest.mark.parametrize(
    'kwargs,match',
    [
        (dict(fraction=0.0), 'fraction'),
        (dict(fraction=0.1, per_class=2), 'not both'),
        (dict(per_class=8), 'Class 2 has 7'),
        (dict(holdout=1.0), 'holdout'),
    ],
)
def test_bad_requests_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        select_label_subset(LABELS, **kwargs)


class Labelled:
    """A dataset that has only ``get_data_info`` (no get_gt_labels)."""

    metainfo = dict(classes=('a', 'b', 'c'))

    def __len__(self):
        return len(LABELS)

    def get_data_info(self, i):
        return dict(gt_label=LABELS[i], idx=i)

    def __getitem__(self, i):
        return self.get_data_info(i)


def test_wrapper_parts(monkeypatch):
    train = LabelSubset(Labelled(), fraction=0.5, holdout=0.1, seed=3)
    held = LabelSubset(
        Labelled(), fraction=0.5, holdout=0.1, seed=3, part='holdout'
    )
    keep, want_held = select_label_subset(LABELS, 0.5, None, 0.1, 3)
    assert [train[i]['idx'] for i in range(len(train))] == keep
    assert held.indices == want_held
    assert list(held.get_gt_labels()) == [LABELS[i] for i in want_held]
    assert train.metainfo == Labelled.metainfo
    with pytest.raises(ValueError, match='needs holdout'):
        LabelSubset(Labelled(), part='holdout')
    monkeypatch.setattr(Labelled, 'get_data_info', lambda self, i: {})
    with pytest.raises(ValueError, match='with_label=True'):
        LabelSubset(Labelled())


def test_builds_from_config_around_a_folder(demo_data_root):
    ds = DATASETS.build(
        dict(
            type='LabelSubset',
            dataset=dict(
                type='CustomDataset',
                data_root=demo_data_root,
                data_prefix='train',
                pipeline=[],
            ),
            per_class=2,
        )
    )
    labels = ds.get_gt_labels()
    assert len(ds) == 2 * len(set(labels.tolist()))
    assert all(v == 2 for v in Counter(labels.tolist()).values())
    assert ds[0]['gt_label'] == labels[0]
