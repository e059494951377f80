"""Which configs log RankMe: those with no other figure of the features.

A config without a validation loop (the presets for one's own folders,
``*custom*.py``, and the DINO-family ImageNet recipes, which users point
at their own folder) logs RankMe, a label-free figure, with RankMeHook.
Not: configs with a kNN validation (the demos), the dense demos (judged
by the dense probes after training) and the ImageNet recipes built on
mmpretrain's
(configs/custom/image_folder.py adds the hook when they run on a folder:
test_image_folder_config.py).
"""

import glob
import os.path as osp

import pytest

from mmssl.config import load_config
from mmssl.registry import HOOKS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(osp.join(ROOT, 'configs', '*', '*.py'))
    # not the bases, nor image_folder.py (it needs RECIPE)
    if osp.basename(osp.dirname(p)) not in ('_base_', 'custom')
)


def _load(path):
    cfg = load_config(osp.join(ROOT, path))
    hooks = [
        h for h in cfg.get('custom_hooks') or [] if h.type == 'RankMeHook'
    ]
    return cfg, hooks


def _expects_rankme(path, cfg) -> bool:
    if not cfg.get('train_dataloader') or cfg.get('val_cfg'):
        return False  # evaluation-only, or a validation figure already
    if 'dense_demo' in path:
        return False
    return 'mmpretrain::' not in open(osp.join(ROOT, path)).read()


@pytest.mark.parametrize('path', CONFIGS)
def test_configs_without_a_figure_log_rankme_once(path):
    cfg, hooks = _load(path)
    if not _expects_rankme(path, cfg):
        assert not hooks, path
        return
    assert len(hooks) == 1, path
    hook = HOOKS.build(hooks[0])
    assert hook.eval_before_train and hook.max_images == 1024
    # the default images: the training folder at the backbone's size
    dataset = hook.default_dataloader(cfg)['dataset']
    train = cfg.train_dataloader.dataset
    while 'data_root' not in train:  # wrappers: MixedResolutionDataset
        dataset, train = dataset['dataset'], train.dataset
    assert dataset['data_root'] == train.data_root
    if 'volumetric' in path:  # the centre cube of each volume
        assert dataset['pipeline'][0]['transform'] == 'ResizeWithPadOrCropd'
    else:
        assert dataset['pipeline'][-2]['type'] == 'CenterCrop'


def test_who_logs_it():
    """The presets for one's own folders, the DINO-family ImageNet
    recipes and the 3D recipe log RankMe; a demo and an mmpretrain-based
    recipe do not. Only these configs are read again (each was read by
    its own case above; reading all of them again took 8 s)."""
    custom = [p for p in CONFIGS if 'custom' in osp.basename(p)]
    assert len(custom) >= 19
    logs = custom + [
        'configs/dinov2/dinov2_vit-s14_8xb128-100e_in1k.py',
        'configs/ibot/ibot_vit-s16_8xb128-100e_in1k.py',
        'configs/volumetric/dino3d_vit-tiny-p16_my-ct.py',
    ]
    silent = [
        'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py',
        'configs/mae/mae_vit-base-p16_8xb512-amp-coslr-300e_in1k.py',
    ]
    for path in logs + silent:
        assert path in CONFIGS, path
        assert _expects_rankme(path, _load(path)[0]) == (path in logs), path
