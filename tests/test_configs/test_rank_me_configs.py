"""The presets for one's own folders log RankMe; the rest not.

A ``*custom*.py`` preset has no labels and no validation loop, so
RankMeHook is its only figure of the features; configs with a kNN
validation (the demos) or ImageNet recipes do not get it (an ImageNet
recipe gets it when configs/custom/image_folder.py runs it on a folder).
"""

import glob
import os.path as osp

import pytest

from mmssl.config.reading import load_config_file
from mmssl.registry import HOOKS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _configs(pattern):
    """Every config of ``configs/*/`` matching ``pattern`` but the bases and
    configs/custom/image_folder.py (it needs RECIPE;
    test_image_folder_config.py)."""
    return sorted(
        osp.relpath(p, ROOT)
        for p in glob.glob(osp.join(ROOT, 'configs', '*', pattern))
        if osp.basename(osp.dirname(p)) not in ('_base_', 'custom')
    )


CUSTOM = _configs('*custom*.py')
OTHERS = [p for p in _configs('*.py') if p not in CUSTOM]


def _rank_hooks(path):
    cfg = load_config_file(osp.join(ROOT, path))
    hooks = cfg.get('custom_hooks') or []
    return cfg, [h for h in hooks if h.type == 'RankMeHook']


@pytest.mark.parametrize('path', CUSTOM)
def test_custom_presets_log_rankme_once(path):
    cfg, hooks = _rank_hooks(path)
    assert len(hooks) == 1, path
    assert not cfg.get('val_cfg'), 'a preset with validation needs none'
    hook = HOOKS.build(hooks[0])
    assert hook.eval_before_train and hook.max_images == 1024
    # the default images: the training folder at the backbone's size
    dataset = hook.default_dataloader(cfg)['dataset']
    train = cfg.train_dataloader.dataset
    while 'data_root' not in train:  # wrappers: MixedResolutionDataset
        dataset, train = dataset['dataset'], train.dataset
    assert dataset['data_root'] == train.data_root
    assert dataset['pipeline'][-2]['type'] == 'CenterCrop'


def test_the_custom_presets_are_found():
    assert len(CUSTOM) >= 18
    assert (
        'configs/multichannel/simclr_resnet50_8xb64-coslr-200e_5ch_custom.py'
    ) in CUSTOM
    assert 'configs/dinov2/dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py' in (
        CUSTOM
    )


@pytest.mark.parametrize('path', OTHERS)
def test_other_configs_do_not(path):
    _, hooks = _rank_hooks(path)
    assert not hooks, path
