"""The depth probe: folder layouts, 16-bit millimetres, bins and
regression learn a fixture whose depth is readable from each patch."""

import math

import cv2
import numpy as np
import pytest
import torch

from mmssl.evaluation.dense_data import depth_pairs, read_depth
from mmssl.evaluation.dense_probe import Featurizer, ProbeSettings
from mmssl.evaluation.depth_probe import (
    bin_centres,
    decode_depth,
    run_depth_probe,
    silog_loss,
)
from mmssl.evaluation.tasks.evaluate import PatchPixels
from tests.support.dense_fixtures import write_depth_folder


def _probe(root, settings, **kwargs):
    """The depth probe on each 4x4 patch's raw pixels of ``root``."""
    mean = np.zeros(3, np.float32)
    featurizer = Featurizer(PatchPixels(4), mean, mean + 255, False)
    return run_depth_probe(
        featurizer,
        depth_pairs(root, 'train'),
        depth_pairs(root, 'val'),
        settings,
        max_depth=10.0,
        **kwargs,
    )


@pytest.mark.parametrize('mode', ['bins', 'regression'])
def test_probe_learns_depth_from_patches(tmp_path, mode):
    root = write_depth_folder(tmp_path)
    out = _probe(
        root,
        ProbeSettings(crop=16, iters=200, lr=0.05, batch_size=4),
        mode=mode,
        n_bins=32,
    )
    m = out['metrics']
    # predicting the mean depth everywhere gives RMSE ~1.4 m here
    assert m['rmse'] < 0.6 and m['delta1'] > 0.8, m
    image, gt, pred = out['samples'][0]
    assert gt[0, 0] == 0 and gt[0, 15] == 5.0
    assert pred.shape == gt.shape == image.shape[:2]


def test_bins_decode_and_silog():
    centres = bin_centres(4, 0.0, 4.0)
    assert centres.tolist() == [0.5, 1.5, 2.5, 3.5]
    logits = torch.full((1, 4, 1, 1), -1e4)
    logits[0, 2] = 0  # all mass on bin 2
    assert decode_depth(logits, 'bins', 4.0, centres).item() == 2.5
    gt = torch.tensor([1.0, 2.0, 0.0])
    # a global scale is forgiven by lambda=1 and not by lambda=0
    assert silog_loss(gt * 2, gt, 1e-3, 10, lam=1.0) < 1e-3
    expected = math.log(2.0)  # sqrt(mean(log 2 ^ 2))
    loss = silog_loss(gt * 2, gt, 1e-3, 10, lam=0.0)
    assert loss.item() == pytest.approx(expected, rel=1e-4)


def test_depth_layouts_and_bad_maps(tmp_path):
    root = write_depth_folder(tmp_path / 'f', 1, 1)
    path = tmp_path / 'f' / 'depth' / 'training' / '0.png'
    assert read_depth(str(path), (16, 16))[0, 1] == 2.0  # mm -> m
    with pytest.raises(ValueError, match='0.png is 16x16 but its image'):
        read_depth(str(path), (8, 16))
    cv2.imwrite(str(path), np.zeros((16, 16), np.uint8))
    with pytest.raises(ValueError, match='16-bit PNG in millimetres'):
        read_depth(str(path), (16, 16))
    nyu = tmp_path / 'nyu' / 'official_splits' / 'test' / 'bathroom'
    nyu.mkdir(parents=True)
    (nyu / 'rgb_00045.jpg').write_bytes(b'x')
    (nyu / 'sync_depth_00045.png').write_bytes(b'x')
    assert depth_pairs(str(tmp_path / 'nyu'), 'val', 'nyu') == [
        (str(nyu / 'rgb_00045.jpg'), str(nyu / 'sync_depth_00045.png'))
    ]
    with pytest.raises(FileNotFoundError, match='train split is empty'):
        depth_pairs(str(tmp_path / 'nyu'), 'train', 'nyu')
    assert root


def test_sweep_keeps_the_lr_with_the_lowest_held_out_rmse(tmp_path):
    out = _probe(
        write_depth_folder(tmp_path),
        ProbeSettings(crop=16, iters=200, batch_size=4, lrs=(1e-7, 0.05)),
        mode='regression',
    )
    # the scores are minus the held-out RMSE: lr 1e-7 stays at the init
    # (sigmoid(0) * 10 = 5 m everywhere), lr 0.05 learns the fixture
    assert set(out['sweep']) == {1e-7, 0.05}
    assert -out['sweep'][0.05] < 0.6 < -out['sweep'][1e-7]
    assert out['lr'] == 0.05
    assert out['metrics']['rmse'] < 0.6
