"""Linear-probe learning-rate sweep: chosen on a held-out part of train,
tested once, on the test split only for the chosen learning rate."""

import json
import os.path as osp

import pytest
from mmengine.config import Config

from mmssl.evaluation.tasks.lr_sweep import _split_cfg, sweep_linear_probe
from mmssl.setup_env import register_all_modules

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
PROBE = osp.join(
    ROOT,
    'configs/benchmarks/linear_probe/linear_resnet18-w16_1xb64-5e_demo.py',
)


def _probe_cfg(data_root: str) -> Config:
    register_all_modules()
    cfg = Config.fromfile(PROBE)
    cfg.model.backbone.init_cfg = None  # a random frozen ResNet is enough
    cfg.custom_hooks = []
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        loader.dataset.data_root = data_root
        loader.num_workers = 0
        loader.persistent_workers = False
    cfg.test_dataloader = cfg.val_dataloader
    cfg.train_cfg = dict(type='IterBasedTrainLoop', max_iters=15)
    cfg.param_scheduler = []
    cfg.default_hooks.checkpoint = None
    return cfg


def test_held_out_part_comes_from_train(demo_data_root):
    cfg = _split_cfg(_probe_cfg(demo_data_root), holdout=0.1, seed=3)
    train, held = cfg.train_dataloader.dataset, cfg.val_dataloader.dataset
    assert train.type == held.type == 'LabelSubset'
    assert train.dataset.data_prefix == held.dataset.data_prefix == 'train'
    assert (train.holdout, train.seed) == (held.holdout, held.seed)
    assert held.part == 'holdout' and train.get('part', 'train') == 'train'
    # the held-out part is evaluated without training augmentation
    assert held.dataset.pipeline == cfg.test_dataloader.dataset.pipeline
    assert cfg.test_dataloader.dataset.data_prefix == 'val'
    with pytest.raises(ValueError, match='already wraps'):
        _split_cfg(cfg, 0.1, 0)


@pytest.mark.slow
def test_sweep_chooses_on_holdout_and_tests_once(demo_data_root, tmp_path):
    cfg = _probe_cfg(demo_data_root)
    out = sweep_linear_probe(cfg, [0.0, 0.5], str(tmp_path), holdout=0.1)
    held = out['holdout']
    assert set(held) == {'lr_0', 'lr_0.5'}
    # lr 0 leaves the head as drawn at init: chance on 10 digits
    assert held['lr_0']['accuracy/top1'] < 25
    assert held['lr_0.5']['accuracy/top1'] > held['lr_0']['accuracy/top1']
    assert out['best_lr'] == 0.5
    assert out['best_holdout'] == held['lr_0.5']['accuracy/top1']
    assert set(out['test']) >= {'accuracy/top1'}
    saved = json.load(open(tmp_path / 'lr_sweep.json'))
    assert saved['best_lr'] == 0.5 and saved['test'] == out['test']
    assert osp.isdir(tmp_path / 'lr_0') and osp.isdir(tmp_path / 'lr_0.5')
