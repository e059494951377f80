"""config_differences: is a checkpoint from the same config?"""

import os.path as osp

from mmengine.config import Config

from mmssl.config.diff import config_differences

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')


def test_same_config_and_run_keys_agree():
    cfg = Config.fromfile(DEMO)
    saved = cfg.pretty_text
    assert config_differences(saved, cfg) == []
    cfg.resume = True
    cfg.load_from = '/somewhere/iter_4.pth'
    assert config_differences(saved, cfg) == []


def test_changed_values_are_named_with_both_sides():
    cfg = Config.fromfile(DEMO)
    saved = cfg.pretty_text
    cfg.model.head.temperature = 0.3
    cfg.train_dataloader.batch_size = 7
    cfg.custom_hooks = [dict(type='X')]
    diffs = config_differences(saved, cfg)
    assert 'model.head.temperature: 0.2 -> 0.3' in diffs
    assert any(d.startswith('train_dataloader.batch_size: ') for d in diffs)
    assert any(d.startswith('custom_hooks[0].type: ') for d in diffs)
    assert len(config_differences(saved, cfg, limit=1)) == 1
