"""Weighted kNN, its metric, the KNNDataset and the feature test loop."""

import math
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmssl.engine.runner import build_runner
from mmssl.engine.runner.feature_extraction import pool_features
from mmssl.evaluation import (
    KNNAccuracy,
    topk_accuracy,
    weighted_knn_scores,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(
    ROOT, 'configs', 'simclr', 'simclr_resnet18-w16_1xb64-10e_demo.py'
)


def test_weighted_knn_scores_by_hand():
    # bank on the unit circle; query at angle 0
    bank = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.6, 0.8]])
    labels = torch.tensor([0, 1, 1, 2])
    query = torch.tensor([[2.0, 0.0]])  # normalised to (1, 0)
    scores = weighted_knn_scores(
        query, bank, labels, num_classes=3, k=2, temperature=0.5
    )
    # two nearest: cos 1.0 (class 0) and cos 0.6 (class 2)
    expected = torch.tensor([[math.exp(1.0 / 0.5), 0.0, math.exp(0.6 / 0.5)]])
    assert torch.allclose(scores, expected)


def test_weighted_knn_k_larger_than_bank_and_chunks():
    torch.manual_seed(0)
    bank = torch.randn(5, 4)
    labels = torch.tensor([0, 1, 0, 1, 2])
    query = torch.randn(7, 4)
    full = weighted_knn_scores(query, bank, labels, 3, k=50, temperature=0.1)
    chunked = weighted_knn_scores(
        query, bank, labels, 3, k=50, temperature=0.1, chunk_size=2
    )
    assert torch.allclose(full, chunked)
    # with k >= N every bank sample votes: scores sum to all the weights
    sims = (
        torch.nn.functional.normalize(query, dim=1)
        @ torch.nn.functional.normalize(bank, dim=1).T
    )
    assert torch.allclose(full.sum(1), (sims / 0.1).exp().sum(1), rtol=1e-5)


def test_weighted_knn_rejects_bad_input():
    with pytest.raises(ValueError, match='bank is empty'):
        weighted_knn_scores(
            torch.randn(2, 3), torch.zeros(0, 3), torch.zeros(0), 2
        )
    with pytest.raises(ValueError, match='temperature'):
        weighted_knn_scores(
            torch.randn(2, 3),
            torch.randn(2, 3),
            torch.zeros(2),
            2,
            temperature=0,
        )


def test_topk_accuracy():
    scores = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.1, 0.4], [0.2, 0.3, 0.5]])
    labels = torch.tensor([1, 2, 0])
    acc = topk_accuracy(scores, labels, topk=(1, 2, 5))
    assert acc['top1'] == pytest.approx(100 / 3)
    assert acc['top2'] == pytest.approx(200 / 3)
    assert acc['top5'] == pytest.approx(100.0)  # k clipped to 3 classes


def test_pool_features_shapes():
    assert pool_features(torch.ones(2, 5, 3, 3)).shape == (2, 5)
    tokens = torch.arange(2 * 4 * 3.0).view(2, 4, 3)
    assert torch.equal(pool_features((tokens,)), tokens[:, 0])
    assert pool_features([torch.ones(2, 7)]).shape == (2, 7)
    # (B, C, D, H, W) volume feature maps: the mean over every voxel
    vol = torch.arange(2 * 3 * 8.0).view(2, 3, 2, 2, 2)
    assert torch.equal(pool_features(vol), vol.view(2, 3, 8).mean(-1))
    with pytest.raises(ValueError, match='shape'):
        pool_features(torch.ones(2, 2, 2, 2, 2, 2))


def test_knn_accuracy_metric_separates_bank_and_query():
    metric = KNNAccuracy(k=1, topk=(1,))
    samples = [
        dict(
            feat=torch.tensor([1.0, 0.0]),
            gt_label=torch.tensor([0]),
            knn_role='bank',
        ),
        dict(
            feat=torch.tensor([0.0, 1.0]),
            gt_label=torch.tensor([1]),
            knn_role='bank',
        ),
        dict(
            feat=torch.tensor([0.9, 0.1]),
            gt_label=torch.tensor([0]),
            knn_role='query',
        ),
        dict(
            feat=torch.tensor([0.9, 0.1]),
            gt_label=torch.tensor([1]),
            knn_role='query',
        ),
    ]
    metric.process(None, samples)
    assert metric.compute_metrics(metric.results) == {'top1': 50.0}
    with pytest.raises(ValueError, match='bank and query'):
        metric.compute_metrics([r for r in metric.results if not r[2]])
    with pytest.raises(ValueError, match='k must be'):
        KNNAccuracy(k=0)


def test_feature_test_loop_on_demo_data(demo_data_root, tmp_path):
    """tools/test.py's path: KNNDataset + FeatureTestLoop + KNNAccuracy."""
    cfg = Config.fromfile(DEMO)
    cfg.work_dir = str(tmp_path)
    for split in ('bank', 'query'):
        cfg.test_dataloader.dataset[split].data_root = demo_data_root
        cfg.test_dataloader.dataset[split].indices = 60
    cfg.test_dataloader.num_workers = 0
    cfg.train_dataloader = None
    cfg.train_cfg = None
    cfg.optim_wrapper = None
    cfg.param_scheduler = None
    cfg.val_dataloader = None
    cfg.val_cfg = None
    cfg.val_evaluator = None
    cfg.default_hooks.checkpoint = None
    runner = build_runner(cfg)
    dataset = runner.test_loop.dataloader.dataset
    assert len(dataset) == 120
    roles = {
        dataset[0]['data_samples'].knn_role,
        dataset[119]['data_samples'].knn_role,
    }
    assert roles == {'bank', 'query'}
    metrics = runner.test()
    assert set(metrics) == {'knn/top1', 'knn/top5'}
    assert 0.0 <= metrics['knn/top1'] <= metrics['knn/top5'] <= 100.0


def test_gathered_knn_results_do_not_carry_batch_storage():
    """Distributed kNN pickles every rank's results to gather them. A
    per-sample feature that is a view of the model's whole token output
    (here the CLS row of (B, 1 + N, C)) used to be pickled with the whole
    storage, once per sample: ~70 s and 6.5 GB for the 2-process DINOv2
    demo. Features are now copies that own their memory."""
    import pickle

    from mmengine.structures import BaseDataElement

    from mmssl.evaluation.feature_loops import _feature_samples

    tokens = torch.randn(16, 1 + 256, 32)  # (B, 1 + N, C)

    class Model(torch.nn.Module):
        def data_preprocessor(self, data, training):
            return data

        def forward(self, inputs, mode):
            return tokens  # pool_features takes the CLS row, a view

    samples = [BaseDataElement(metainfo=dict(knn_role='bank'))] * 16
    out = _feature_samples(
        Model(), dict(inputs=None, data_samples=samples), None
    )
    for sample, cls in zip(out, tokens[:, 0]):
        torch.testing.assert_close(sample['feat'], cls)
        storage = sample['feat'].untyped_storage().nbytes()
        assert storage == 32 * 4, storage
    metric = KNNAccuracy()
    view_samples = [
        dict(feat=tokens[i, 0], gt_label=0, knn_role='bank') for i in range(16)
    ]
    metric.process(None, view_samples)
    size = len(pickle.dumps(metric.results, protocol=2))
    # 16 x 32 floats plus ~0.4 kB of pickle overhead per tensor; with the
    # views it was the whole storage per sample, 16 x 526 kB
    assert size < 64 * 1024, size


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
def _unit_rows(x):
    return x / x.norm(dim=1, keepdim=True)


def test_knn_defaults_empty_query_and_messages():
    torch.manual_seed(1)
    bank, query = torch.randn(30, 4), torch.randn(3, 4)
    labels = torch.randint(0, 3, (30,))
    # defaults: k=20 neighbours (seen at T=1), T=0.07, against plain sums
    sims = _unit_rows(query) @ _unit_rows(bank).T
    top_sim, top_idx = sims.topk(20, dim=1)
    for kwargs, t in ((dict(temperature=1.0), 1.0), (dict(k=20), 0.07)):
        expected = torch.zeros(3, 3)
        for qi in range(3):
            for s, i in zip(top_sim[qi].tolist(), top_idx[qi].tolist()):
                expected[qi, labels[i]] += math.exp(s / t)
        scores = weighted_knn_scores(query, bank, labels, 3, **kwargs)
        torch.testing.assert_close(scores, expected, rtol=1e-5, atol=0)
    # no queries: (0, num_classes) scores, and accuracy refuses them
    empty = weighted_knn_scores(torch.zeros(0, 4), bank, labels, 3)
    assert empty.shape == (0, 3)
    with pytest.raises(ValueError, match=r'^No query samples to evaluate\.$'):
        topk_accuracy(empty, torch.zeros(0, dtype=torch.long))
    assert topk_accuracy(torch.tensor([[0.2, 0.8]]), torch.tensor([1])) == {
        'top1': 100.0,
        'top5': 100.0,
    }
    with pytest.raises(
        ValueError,
        match=r'^The kNN feature bank is empty: the labelled train split '
        r'gave no samples\.$',
    ):
        weighted_knn_scores(query, torch.zeros(0, 4), torch.zeros(0), 3)


def test_knn_metric_settings_roles_labels_and_log(monkeypatch):
    import importlib

    m = KNNAccuracy()
    assert (m.k, m.temperature, m.prefix, m.collect_device) == (
        20,
        0.07,
        'knn',
        'cpu',
    )
    m = KNNAccuracy(prefix='probe', collect_device='gpu')
    assert (m.prefix, m.collect_device) == ('probe', 'gpu')
    # class 0 has two neighbours at cos 0.6, class 2 one at cos 0.95: at
    # T=0.07 the close one wins, at T=10 the two far ones do
    samples = [
        dict(feat=torch.tensor([0.6, 0.8]), gt_label=torch.tensor([0])),
        dict(feat=torch.tensor([0.6, -0.8]), gt_label=torch.tensor([0])),
        dict(feat=torch.tensor([0.95, 0.3122]), gt_label=torch.tensor([2])),
        dict(feat=torch.tensor([1.0, 0.0]), gt_label=torch.tensor([0])),
    ]
    for s in samples[:3]:
        s['knn_role'] = 'bank'  # the last one has no role: a query
    logs = []
    module = importlib.import_module('mmssl.evaluation.metrics.knn_accuracy')
    monkeypatch.setattr(
        module, 'print_log', lambda msg, logger: logs.append((msg, logger))
    )
    for temperature, top1 in ((0.07, 0.0), (10.0, 100.0)):
        m = KNNAccuracy(k=3, temperature=temperature, topk=(1, 5))
        m.process(None, samples)
        assert [r[1:] for r in m.results] == [
            (0, True),
            (0, True),
            (2, True),
            (0, False),
        ]
        assert m.compute_metrics(m.results) == {'top1': top1, 'top5': 100.0}
    assert logs[-1] == (
        'kNN (k=3, T=10.0) on 1 queries against a bank of 3: '
        'top1=100.00, top5=100.00',
        'current',
    )
    with pytest.raises(
        ValueError,
        match=r'^KNNAccuracy needs bank and query samples, got 3 bank and 0 '
        r'query samples\. Use a KNNDataset with a labelled `bank` \(train\) '
        r'and `query` \(val\) split\.$',
    ):
        m.compute_metrics(m.results[:3])
