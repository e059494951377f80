"""knn_eval.py --linear: a logistic-regression probe on the kNN features."""

import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import default_collate

from mmssl.evaluation import fit_linear_probe
from mmssl.evaluation.functional import topk_accuracy
from tests.support.tools import load_tool

MAE = 'configs/mae/mae_vit-tiny-p4_1xb64-4e_demo.py'


def _colour_folder(root, per_class: int, seed: int) -> str:
    """``root/<class>/*.png``: 3 classes, each a noisy mean colour."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(seed)
    for i, cls in enumerate(('a', 'b', 'c')):
        (root / cls).mkdir(parents=True)
        for j in range(per_class):
            img = rng.normal(128, 60, (32, 32, 3))
            img[..., i] += 40  # one channel brighter per class
            img = img.clip(0, 255).astype(np.uint8)
            cv2.imwrite(str(root / cls / f'{j}.png'), img)
    return str(root)


def _features(model, dataset):
    """(features, labels) of every sample, extracted here one by one."""
    from mmssl.engine.runner.feature_extraction import pool_features

    model.eval()
    feats, labels = [], []
    for i in range(len(dataset)):
        data = model.data_preprocessor(default_collate([dataset[i]]), False)
        with torch.no_grad():
            feats.append(pool_features(model(data['inputs'], mode='tensor')))
        labels.append(int(dataset[i]['data_samples'].gt_label))
    return torch.cat(feats), torch.tensor(labels)


def test_linear_flag_reports_the_probe_of_the_bank_on_the_queries(
    tmp_path, monkeypatch
):
    import mmssl.engine.runner as runners

    tool = load_tool('misc/knn_eval.py')
    seen = {}
    real_build = runners.build_runner

    def spy(cfg):
        seen['runner'] = real_build(cfg)
        return seen['runner']

    monkeypatch.setattr(runners, 'build_runner', spy)
    bank = _colour_folder(tmp_path / 'train', 10, 0)
    query = _colour_folder(tmp_path / 'val', 6, 1)
    argv = [MAE, '--train-folder', bank, '--val-folder', query]
    argv += ['--img-size', '32', '--batch-size', '7', '--num-workers', '0']
    metrics = tool.main(argv + ['--linear', '--linear-wd', '0.02'])
    assert set(metrics) == {
        'knn/top1',
        'knn/top5',
        'linear/top1',
        'linear/top5',
        'knn/floor_top1',  # the bank's majority class for every query
    }
    assert metrics['knn/floor_top1'] == pytest.approx(100 / 3)
    runner = seen['runner']
    dataset = runner.test_dataloader.dataset
    bank_x, bank_y = _features(runner.model, dataset.bank)
    query_x, query_y = _features(runner.model, dataset.query)
    assert bank_x.shape == (30, 96) and query_x.shape == (18, 96)
    probe = fit_linear_probe(bank_x, bank_y, 3, weight_decay=0.02)
    expected = topk_accuracy(probe(query_x), query_y, (1,))['top1']
    assert metrics['linear/top1'] == pytest.approx(expected, abs=1e-4)
    # the colour is linearly readable from a random ViT: far above 1/3
    assert metrics['linear/top1'] > 80
    assert metrics['linear/top5'] == 100.0  # 3 classes: top-5 is all


def test_set_metrics_adds_one_probe_and_sets_k():
    tool = load_tool('misc/knn_eval.py')
    cfg = Config(
        dict(
            test_evaluator=[
                dict(type='KNNAccuracy', k=20),
                dict(type='LinearProbeAccuracy', weight_decay=1.0),
            ]
        )
    )
    args = tool.parse_args([MAE, '--linear', '--linear-wd', '0.1', '--k', '5'])
    tool.set_metrics(cfg, args)
    assert cfg.test_evaluator == [
        dict(type='KNNAccuracy', k=5),
        dict(type='LinearProbeAccuracy', weight_decay=0.1, topk=(1, 5)),
    ]
    # without --linear a single kNN metric stays a dict
    cfg = Config(dict(test_evaluator=dict(type='KNNAccuracy', k=20)))
    tool.set_metrics(cfg, tool.parse_args([MAE]))
    assert cfg.test_evaluator == dict(type='KNNAccuracy', k=20)


def test_negative_linear_wd_is_refused(capsys):
    tool = load_tool('misc/knn_eval.py')
    with pytest.raises(SystemExit):
        tool.parse_args([MAE, '--linear', '--linear-wd', '-1'])
    assert '--linear-wd must be >= 0, got -1.0' in capsys.readouterr().err


def test_pool_patch_mean_averages_the_tokens_after_the_first():
    tool = load_tool('misc/knn_eval.py')

    class Stub(torch.nn.Module):
        def extract_feat(self, inputs):
            # like BEiT v2: (tokens of layer -2, tokens of the last layer)
            return (inputs * 0, inputs)

    tokens = torch.arange(2 * 4 * 3, dtype=torch.float).reshape(2, 4, 3)
    model = Stub()
    tool.pool_patch_mean(model)
    expected = torch.stack([t[1:].sum(0) / 3 for t in tokens])
    torch.testing.assert_close(model.extract_feat(tokens), expected)
    with pytest.raises(SystemExit, match=r'got features of shape \(2, 3\)'):
        model.extract_feat(torch.zeros(2, 3))
    with pytest.raises(SystemExit, match='has none'):
        tool.pool_patch_mean(torch.nn.Linear(2, 2))
