"""RankMe and spread (mmssl/evaluation/rank.py) against hand-computed
values, and the RankMe metric."""

import pytest
import torch

from mmssl.evaluation.metrics import RankMe
from mmssl.evaluation.rank import rank_metrics, rankme, spread


def test_rankme_by_hand():
    # singular values 3 and 1: p = (3/4, 1/4),
    # exp(-(3/4 ln 3/4 + 1/4 ln 1/4)) = exp(0.562335) = 1.754765
    z = torch.tensor([[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert rankme(z) == pytest.approx(1.754765, abs=1e-5)
    # rotating the rows or the feature axes, or scaling, changes nothing
    q, _ = torch.linalg.qr(torch.randn(2, 2, dtype=torch.float64))
    assert rankme(5 * z.double() @ q) == pytest.approx(1.754765, abs=1e-5)


def test_rankme_of_equal_directions_and_of_collapse():
    # k orthogonal directions of the same length: rank k
    z = torch.zeros(10, 8)
    z[torch.arange(6), torch.arange(6)] = 2.0
    assert rankme(z) == pytest.approx(6.0, abs=1e-4)
    # every image on one direction (collapse): rank 1
    collapsed = torch.randn(50, 1) @ torch.randn(1, 16)
    assert rankme(collapsed) == pytest.approx(1.0, abs=1e-4)
    # all zeros: nothing is spanned
    assert rankme(torch.zeros(4, 3)) == 1.0


def test_spread_by_hand():
    # +e_i and -e_i for each of D axes: on every axis one +1, one -1 and
    # 2D - 2 zeros: std 1/sqrt(D), times sqrt(D) = 1
    d = 5
    eye = torch.eye(d)
    assert spread(torch.cat([eye, -eye])) == pytest.approx(1.0, abs=1e-9)
    # the same feature for every image: 0
    assert spread(torch.ones(7, d) * 3) == pytest.approx(0.0, abs=1e-9)
    # the length of a feature does not count
    scaled = torch.cat([eye * 2, -eye * 7])
    assert spread(scaled) == pytest.approx(1.0, abs=1e-9)


def test_rank_metrics_fraction_and_bad_input():
    z = torch.zeros(10, 8)
    z[torch.arange(4), torch.arange(4)] = 1.0
    out = rank_metrics(z)
    assert out['rankme'] == pytest.approx(4.0, abs=1e-4)
    assert out['rankme_fraction'] == pytest.approx(4.0 / 8, abs=1e-4)
    assert (out['images'], out['dim']) == (10, 8)
    with pytest.raises(ValueError, match='at least 2 images, got 1'):
        rankme(torch.ones(1, 4))
    with pytest.raises(ValueError, match=r'\(N, D\), got shape \(2, 3, 4\)'):
        rankme(torch.ones(2, 3, 4))
    bad = torch.ones(3, 2)
    bad[0, 0] = float('nan')
    with pytest.raises((ValueError, RuntimeError)):
        rankme(bad)


def test_rankme_metric_prefix_values_and_collapse_warning(monkeypatch):
    # recorded where it is logged: what reaches stdout depends on the
    # handlers an earlier test in the process gave the current logger
    logs = []
    monkeypatch.setattr(
        'mmssl.evaluation.metrics.rank_metric.print_log',
        lambda msg, logger=None, level=20: logs.append((level, msg)),
    )
    metric = RankMe()
    z = torch.zeros(6, 4)
    z[torch.arange(3), torch.arange(3)] = 1.0
    metric.process({}, [dict(feat=f) for f in z])
    out = metric.compute_metrics(metric.results)
    assert out['rankme'] == pytest.approx(3.0, abs=1e-4)
    assert out['rankme_fraction'] == pytest.approx(0.75, abs=1e-4)
    assert set(out) == {'rankme', 'rankme_fraction', 'spread'}
    assert metric.default_prefix == 'rank'

    collapsed = RankMe()
    row = torch.tensor([1.0, 2.0, 0.5])
    collapsed.process({}, [dict(feat=row * s) for s in (1, 2, 3)])
    assert not any('collapse' in msg for _, msg in logs)
    value = collapsed.compute_metrics(collapsed.results)['rankme']
    assert value == pytest.approx(1.0, abs=1e-4)
    assert logs[-1][0] == 30 and logs[-1][1].startswith('RankMe is 1.00')

    with pytest.raises(ValueError, match='at least 2 images.*gave 1'):
        RankMe().compute_metrics([torch.ones(3)])
