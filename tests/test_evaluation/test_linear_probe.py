"""The linear-probe metric: its fit against scikit-learn, and the metric
on bank / query samples."""

import pytest
import torch

from mmssl.evaluation import LinearProbeAccuracy, fit_linear_probe


def _data(n, seed):
    g = torch.Generator().manual_seed(seed)
    centres = 2.0 * torch.randn(3, 5, generator=g)
    labels = torch.arange(n) % 3
    feats = centres[labels] + torch.randn(n, 5, generator=g)
    feats[:, 4] = feats[:, 4] * 50.0 + 7.0  # an unstandardised column
    return feats, labels


def test_fit_matches_sklearn_logistic_regression():
    sklearn = pytest.importorskip('sklearn.linear_model')
    preprocessing = pytest.importorskip('sklearn.preprocessing')
    feats, labels = _data(60, 0)
    query, _ = _data(20, 1)
    wd = 0.05
    probe = fit_linear_probe(feats, labels, 3, weight_decay=wd)
    ours = probe(query).softmax(dim=1)
    # sum CE + ||W||^2 / (2C) == N * (mean CE + wd / 2 ||W||^2)
    scaler = preprocessing.StandardScaler().fit(feats.double().numpy())
    # torch's std is the unbiased one: rescale to match
    n = len(feats)
    scaler.scale_ = scaler.scale_ * (n / (n - 1)) ** 0.5
    clf = sklearn.LogisticRegression(
        C=1.0 / (n * wd), tol=1e-10, max_iter=10000
    ).fit(scaler.transform(feats.double().numpy()), labels.numpy())
    theirs = clf.predict_proba(scaler.transform(query.double().numpy()))
    torch.testing.assert_close(
        ours, torch.from_numpy(theirs), atol=1e-5, rtol=0
    )


def test_fit_separates_and_decay_shrinks():
    feats, labels = _data(90, 2)
    probe = fit_linear_probe(feats, labels, 3, weight_decay=1e-4)
    assert (probe(feats).argmax(1) == labels).float().mean() > 0.95
    strong = fit_linear_probe(feats, labels, 3, weight_decay=100.0)
    # a heavy L2 penalty keeps the logits near the class prior (uniform)
    assert strong(feats).softmax(1).max() < 0.5
    with pytest.raises(ValueError, match='weight_decay must be >= 0'):
        fit_linear_probe(feats, labels, 3, weight_decay=-1.0)


def test_metric_fits_on_bank_scores_queries():
    feats, labels = _data(120, 3)
    metric = LinearProbeAccuracy(weight_decay=1e-3, topk=(1, 2))
    samples = [
        dict(feat=f, gt_label=torch.tensor([int(y)]), knn_role=role)
        for f, y, role in zip(
            feats, labels, ['bank'] * 90 + ['query'] * 30, strict=True
        )
    ]
    metric.process({}, samples)
    result = metric.compute_metrics(metric.results)
    probe = fit_linear_probe(feats[:90], labels[:90], 3, weight_decay=1e-3)
    expected = (probe(feats[90:]).argmax(1) == labels[90:]).float().mean()
    assert result['top1'] == pytest.approx(100.0 * expected.item())
    assert result['top1'] > 90.0 and result['top2'] >= result['top1']
    only_queries = [(f, 0, False) for f in feats[:4]]
    with pytest.raises(ValueError, match='LinearProbeAccuracy needs bank'):
        metric.compute_metrics(only_queries)
