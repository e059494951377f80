"""Every volumetric demo (``configs/**/*3d*_demo.py``) trains 2 CPU
iterations on a tiny synthetic volume set, and gives one kNN feature
vector per volume."""

import copy
import glob
import math
import os.path as osp
import sys

import pytest
import torch
from mmengine.config import Config

from mmssl.engine.runner import build_runner
from mmssl.registry import DATASETS, MODELS

pytest.importorskip('monai')

from test_demo_configs import (  # noqa: E402
    LossRecorder,
    WeightRecorder,
    check_weights_moved,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
VOLUME_DEMOS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(
        osp.join(ROOT, 'configs', '**', '*3d*_demo.py'), recursive=True
    )
)


@pytest.fixture(scope='module')
def volume_root(tmp_path_factory) -> str:
    sys.path.insert(0, osp.join(ROOT, 'tools', 'misc'))
    from make_volume_dataset import make_dataset

    root = str(tmp_path_factory.mktemp('volumes'))
    make_dataset(root, size=32, train_per_class=2, val_per_class=1)
    return root


def _repoint(obj, root: str):
    if isinstance(obj, str) and obj.startswith('data/volumes'):
        return root + obj[len('data/volumes') :]
    if isinstance(obj, dict):
        return type(obj)({k: _repoint(v, root) for k, v in obj.items()})
    if isinstance(obj, (list, tuple)):
        return type(obj)(_repoint(v, root) for v in obj)
    return obj


def test_volume_demos_exist():
    names = ' '.join(VOLUME_DEMOS)
    for algo in ('simclr3d', 'mae3d', 'swinunetr3d', 'dino3d'):
        assert algo in names, VOLUME_DEMOS


@pytest.mark.slow
@pytest.mark.parametrize('path', VOLUME_DEMOS)
def test_volume_demo_trains(path, volume_root, tmp_path):
    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = _repoint(cfg.train_dataloader.to_dict(), volume_root)
    loader.update(batch_size=4, num_workers=0, persistent_workers=False)
    cfg.train_dataloader = loader  # 8 volumes: 2 iterations
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
    for name in ('val', 'test'):
        cfg[f'{name}_dataloader'] = None
        cfg[f'{name}_cfg'] = None
        cfg[f'{name}_evaluator'] = None
    for sched in cfg.get('param_scheduler') or []:
        sched.update(begin=0, end=1)
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.work_dir = str(tmp_path)
    cfg.launcher = 'none'
    runner = build_runner(copy.deepcopy(cfg))
    recorder = LossRecorder()
    runner.register_hook(recorder, priority='LOWEST')
    weights = WeightRecorder()
    runner.register_hook(weights)
    runner.train()
    check_weights_moved(weights.start, runner.model, cfg)
    assert len(recorder.records) == 2
    for record in recorder.records:
        for key, value in record.items():
            assert math.isfinite(value), (key, value)
    assert (tmp_path / 'epoch_1.pth').is_file()


@pytest.mark.parametrize('path', VOLUME_DEMOS)
def test_volume_demo_features_for_knn(path, volume_root):
    """The kNN test data of the demo: labelled volumes, one feature
    vector each, the same on a second call."""
    from mmengine.dataset import default_collate

    from mmssl.evaluation import batch_features

    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = _repoint(cfg.test_dataloader.to_dict(), volume_root)
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
