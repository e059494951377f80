"""Every volumetric demo (``configs/**/*3d*_demo.py``) trains 2 CPU
iterations on a tiny synthetic volume set, and gives one kNN feature
vector per volume."""

import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmssl.registry import DATASETS, MODELS
from tests.support.tools import load_tool

pytest.importorskip('monai')

from tests.test_configs.test_demo_configs import (  # noqa: E402
    repoint_prefixes,
    train_two_iterations,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
VOLUME_DEMOS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(
        osp.join(ROOT, 'configs', '**', '*3d*_demo.py'), recursive=True
    )
    # recipe bases such as _base_/schedules/.../dinov2_demo.py are no demos
    if '_base_' not in p
)


@pytest.fixture(scope='module')
def volume_root(tmp_path_factory) -> str:
    make_dataset = load_tool('misc/make_volume_dataset.py').make_dataset

    root = str(tmp_path_factory.mktemp('volumes'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


def test_volume_demos_exist():
    names = ' '.join(VOLUME_DEMOS)
    for algo in ('simclr3d', 'mae3d', 'swinunetr3d', 'dino3d'):
        assert algo in names, VOLUME_DEMOS


@pytest.mark.slow
@pytest.mark.parametrize('path', VOLUME_DEMOS)
def test_volume_demo_trains(path, volume_root, tmp_path):
    # 8 volumes: 2 iterations
    train_two_iterations(path, 'data/volumes', volume_root, 4, tmp_path)


@pytest.mark.parametrize('path', VOLUME_DEMOS)
def test_volume_demo_features_for_knn(path, volume_root):
    """The kNN test data of the demo: labelled volumes, one feature
    vector each, the same on a second call."""
    from mmengine.dataset import default_collate

    from mmssl.engine.runner.feature_extraction import batch_features

    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = cfg.test_dataloader.to_dict()
    loader = repoint_prefixes(loader, {'data/volumes': volume_root})
    dataset = DATASETS.build(loader['dataset'])
    assert len(dataset) == 12  # 8 bank + 4 queries
    samples = [dataset[i] for i in (0, 2, 8, 11)]
    labels = [int(s['data_samples'].gt_label) for s in samples]
    assert labels == [0, 1, 0, 3]
    batch = default_collate(samples)
    assert type(batch['inputs']) is torch.Tensor
    assert batch['inputs'].shape == (4, 1, 32, 32, 32)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.eval()
    feats = batch_features(model, batch)
    assert feats.dim() == 2 and feats.shape[0] == 4, feats.shape
    torch.testing.assert_close(feats, batch_features(model, batch))
