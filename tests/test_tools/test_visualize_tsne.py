"""visualize_tsne: files written, shapes, feature choices, colouring."""

import os.path as osp

import cv2
import numpy as np
import pytest
import torch

from mmssl.visualization.tsne import select_features
from tests.support.tools import load_tool, tiny_config


def test_select_features():
    maps = torch.arange(2 * 3 * 2 * 2, dtype=torch.float).view(2, 3, 2, 2)
    tokens = torch.randn(2, 5, 4)
    assert torch.equal(
        select_features((maps,), 'pooled'), maps.mean(dim=(2, 3))
    )
    assert torch.equal(select_features(tokens, 'cls'), tokens[:, 0])
    assert torch.equal(
        select_features((maps, tokens), 'stage:0'), maps.mean(dim=(2, 3))
    )
    with pytest.raises(ValueError, match='feature map'):
        select_features((maps,), 'cls')
    with pytest.raises(ValueError, match='out_indices'):
        select_features((maps,), 'stage:3')
    with pytest.raises(ValueError, match='Unknown'):
        select_features((maps,), 'mean')


@pytest.mark.slow
def test_tsne_on_folders_by_source(demo_data_root, tmp_path):
    tool = load_tool('analysis_tools/visualize_tsne.py')
    out = tool.main(
        [
            tiny_config('simclr_tiny'),
            '--work-dir',
            str(tmp_path),
            '--data-root',
            osp.join(demo_data_root, 'val'),
            osp.join(demo_data_root, 'train'),
            '--max-num-samples',
            '40',
            '--n-iter',
            '250',
            '--color-by',
            'source',
            '--feature',
            'stage:-1',
        ]
    )
    img = cv2.imread(out['png'])
    assert img is not None and img.shape == (500, 500, 3)
    feats = np.load(tmp_path / 'features.npy')
    labels = np.load(tmp_path / 'labels.npy')
    sources = np.load(tmp_path / 'sources.npy')
    emb = np.load(tmp_path / 'tsne.npy')
    n = feats.shape[0]
    assert 38 <= n <= 42 and feats.shape[1] == 32  # width-4 ResNet: 32 ch
    assert labels.shape == sources.shape == (n,) and emb.shape == (n, 2)
    assert set(sources) == {0, 1}  # val and train folders both sampled
    assert set(labels) <= set(range(10))


@pytest.mark.slow
def test_tsne_on_knn_config_split(demo_data_root, tmp_path):
    tool = load_tool('analysis_tools/visualize_tsne.py')
    cfg = tmp_path / 'cfg.py'
    cfg.write_text(
        f"_base_ = ['{tiny_config('simclr_tiny')}', "
        f"'{osp.dirname(tiny_config('x'))}/../../../configs/_base_/"
        "datasets/demo_knn.py']\n"
    )
    out = tool.main(
        [
            str(cfg),
            '--work-dir',
            str(tmp_path / 'out'),
            '--dataset-split',
            'all',
            '--max-num-samples',
            '30',
            '--n-iter',
            '250',
            '--cfg-options',
            f'test_dataloader.dataset.bank.data_root={demo_data_root}',
            f'test_dataloader.dataset.query.data_root={demo_data_root}',
        ]
    )
    # bank (1438) and query (359) sampled in proportion: 24 + 6
    assert np.bincount(out['sources']).tolist() == [24, 6]
    assert cv2.imread(out['png']) is not None
