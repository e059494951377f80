"""configs/custom/image_folder.py: an ImageNet recipe on your own folder.

The config named by the ``RECIPE`` environment variable, with only its
training dataset replaced by an ``ImageFolderDataset`` over ``data_root``
that keeps the recipe's pipeline (and a work dir named after the recipe).
It replaced one ``*_custom.py`` copy per recipe. Without labels there is
no kNN figure, so it adds a RankMeHook (a label-free figure of the
features) to the recipe's hooks.
"""

import glob
import os.path as osp

import pytest

from mmssl.config import load_config
from mmssl.config.keys import check_top_level_keys
from mmssl.config.options import merge_cfg_options

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FOLDER = osp.join(ROOT, 'configs', 'custom', 'image_folder.py')
#: the ImageNet recipes that read mmpretrain's ``ImageNet`` dataset
RECIPES = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(osp.join(ROOT, 'configs', '*', '*_in1k*.py'))
    if 'mmpretrain::' in open(p).read()
)


def _unscoped(node):
    """``node`` without ``_scope_`` keys: mmengine marks a base variable
    read as ``{{_base_.train_pipeline}}`` with its package's scope."""
    if isinstance(node, dict):
        return {k: _unscoped(v) for k, v in node.items() if k != '_scope_'}
    if isinstance(node, (list, tuple)):
        return type(node)(_unscoped(v) for v in node)
    return node


def test_the_recipes_read_imagenet_folders():
    assert len(RECIPES) == 27
    cfg = load_config(osp.join(ROOT, RECIPES[0]))
    assert cfg.train_dataloader.dataset.type == 'ImageNet'


@pytest.mark.parametrize('recipe', RECIPES, ids=osp.basename)
def test_only_the_dataset_changes(recipe, monkeypatch):
    monkeypatch.setenv('RECIPE', osp.join(ROOT, recipe))
    cfg = load_config(FOLDER)
    # SSLRunner's check: keys of the recipe's mmpretrain base are known
    check_top_level_keys(list(cfg.keys()), cfg.filename)
    folder = cfg.to_dict()
    ref = load_config(osp.join(ROOT, recipe)).to_dict()
    name = osp.basename(recipe)[: -len('.py')]
    assert folder.pop('work_dir') == f'work_dirs/{name}_folder'
    dataset = folder['train_dataloader'].pop('dataset')
    ref_dataset = ref['train_dataloader'].pop('dataset')
    hooks = folder.pop('custom_hooks')
    assert hooks == ref.pop('custom_hooks', []) + [dict(type='RankMeHook')]
    assert folder == ref  # model, schedule, other hooks, loader settings
    assert _unscoped(dataset) == dict(
        type='ImageFolderDataset',
        data_root='data/custom',
        pipeline=_unscoped(ref_dataset['pipeline']),
    )


def test_data_root_override_and_relative_recipe(monkeypatch):
    # relative to configs/custom/, as mmengine resolves a _base_ path
    monkeypatch.setenv(
        'RECIPE', '../npid/npid_resnet50_8xb32-steplr-200e_in1k.py'
    )
    cfg = load_config(FOLDER)
    merge_cfg_options(
        cfg,
        {
            'train_dataloader.dataset.data_root': ['/data/a', '/data/b'],
            'model.num_samples': 7,
        },
    )
    assert cfg.train_dataloader.dataset.data_root == ['/data/a', '/data/b']
    assert cfg.model.num_samples == 7
    assert cfg.work_dir.endswith('npid_resnet50_8xb32-steplr-200e_in1k_folder')


def test_a_recipe_with_rankme_keeps_its_own(monkeypatch):
    recipe = 'configs/dinov2/dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py'
    monkeypatch.setenv('RECIPE', osp.join(ROOT, recipe))
    hooks = load_config(FOLDER).custom_hooks
    ref = load_config(osp.join(ROOT, recipe)).custom_hooks
    assert [h.type for h in hooks].count('RankMeHook') == 1
    assert hooks == ref


def test_rankme_size_override(monkeypatch):
    monkeypatch.setenv('RECIPE', osp.join(ROOT, RECIPES[0]))
    cfg = load_config(FOLDER)
    merge_cfg_options(cfg, {'custom_hooks.-1.max_images': 256})
    assert cfg.custom_hooks[-1] == dict(type='RankMeHook', max_images=256)


def test_without_recipe_the_error_names_it(monkeypatch):
    monkeypatch.delenv('RECIPE', raising=False)
    with pytest.raises(KeyError, match='RECIPE'):
        load_config(FOLDER)
