"""The MMSelfSup migration on files: ``_base_`` merged, folders, the tool's
report, the train-time hints, and a migrated config that builds its
dataset, draws a sample and builds its model."""

import os
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from PIL import Image

from mmssl.config.keys import check_not_mmselfsup, check_top_level_keys
from mmssl.config.migrate_mmselfsup import migrate_path
from mmssl.config.options import UnknownConfigKeyError
from tests.support.tools import load_tool

# An MMSelfSup 1.x-style SimCLR recipe, split into bases as MMSelfSup did:
# a tiny ResNet-18 at 32 px on an ImageNet-style folder with meta/train.txt.
BASE_MODEL = """
model = dict(
    type='SimCLR',
    data_preprocessor=dict(
        mean=(123.675, 116.28, 103.53),
        std=(58.395, 57.12, 57.375),
        bgr_to_rgb=True),
    backbone=dict(
        type='ResNet', depth=18, in_channels=3, out_indices=[4],
        norm_cfg=dict(type='BN')),
    neck=dict(type='NonLinearNeck', in_channels=512, hid_channels=16,
              out_channels=8, num_layers=2, with_avg_pool=True),
    head=dict(type='ContrastiveHead',
              loss=dict(type='mmcls.CrossEntropyLoss'), temperature=0.1))
"""
BASE_DATA = """
dataset_type = 'mmcls.ImageNet'
data_root = 'data/imagenet/'
view_pipeline = [
    dict(type='RandomResizedCrop', size=32, scale=(0.5, 1.0),
         backend='pillow'),
    dict(type='RandomApply', transforms=[dict(type='ColorJitter',
         brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)], prob=0.8),
    dict(type='RandomGrayscale', prob=0.2, keep_channels=True),
    dict(type='RandomGaussianBlur', sigma_min=0.1, sigma_max=2.0, prob=0.5),
    dict(type='RandomSolarize', threshold=128, prob=0.1),
]
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='MultiView', num_views=2, transforms=[view_pipeline]),
    dict(type='PackSelfSupInputs', meta_keys=['img_path']),
]
train_dataloader = dict(
    batch_size=2, num_workers=0,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(type=dataset_type, data_root=data_root,
                 ann_file='meta/train.txt',
                 data_prefix=dict(img_path='train/'), pipeline=train_pipeline))
"""
BASE_RUNTIME = """
default_scope = 'mmselfsup'
default_hooks = dict(logger=dict(type='LoggerHook', interval=1))
vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(type='SelfSupVisualizer', vis_backends=vis_backends,
                  name='visualizer')
"""
CONFIG = """
_base_ = ['../_base_/models/simclr.py', '../_base_/datasets/in1k_simclr.py',
          '../_base_/default_runtime.py']
optimizer = dict(type='mmselfsup.LARS', lr=0.3, momentum=0.9,
                 weight_decay=1e-6)
optim_wrapper = dict(type='OptimWrapper', optimizer=optimizer)
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=2)
"""


def _write(path, text):
    os.makedirs(osp.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


@pytest.fixture
def mmselfsup_configs(tmp_path):
    root = tmp_path / 'configs' / 'selfsup'
    _write(str(root / '_base_/models/simclr.py'), BASE_MODEL)
    _write(str(root / '_base_/datasets/in1k_simclr.py'), BASE_DATA)
    _write(str(root / '_base_/default_runtime.py'), BASE_RUNTIME)
    _write(str(root / 'simclr/simclr_resnet18_1xb2-2e_in1k.py'), CONFIG)
    return str(root)


def test_folder_migration_writes_flat_configs(mmselfsup_configs, tmp_path):
    out_dir = str(tmp_path / 'out')
    (report,) = migrate_path(mmselfsup_configs, out_dir + os.sep)
    out = osp.join(out_dir, 'simclr', 'simclr_resnet18_1xb2-2e_in1k.py')
    cfg = Config.fromfile(out)
    assert '_base_' not in open(out).read().split('\n', 3)[3]
    assert cfg.default_scope == 'mmssl'
    assert cfg.optim_wrapper.optimizer.type == 'LARS'
    assert cfg.model.backbone.get('out_indices') is None  # [4] -> (3,)
    assert cfg.visualizer.type == 'UniversalVisualizer'
    # the result passes mmssl's own top-level key check
    check_top_level_keys(list(cfg.keys()), out)
    assert any(w == 'view_pipeline' for w, _ in report.changed)


def test_tool_prints_changes_and_reasons(mmselfsup_configs, tmp_path, capsys):
    tool = load_tool('misc/migrate_mmselfsup.py')
    src = osp.join(
        mmselfsup_configs, 'simclr', 'simclr_resnet18_1xb2-2e_in1k.py'
    )
    dst = str(tmp_path / 'simclr.py')
    assert tool.main([src, '-o', dst]) == 0
    text = capsys.readouterr().out
    assert 'RandomGaussianBlur' in text and '1 of 1 configs migrated' in text
    assert osp.isfile(dst)
    # a file that cannot be loaded: named with the reason, status 1
    _write(
        str(tmp_path / 'bad' / 'broken.py'),
        "_base_ = 'mmcls::resnet/resnet50_8xb32_in1k.py'\n",
    )
    assert tool.main([str(tmp_path / 'bad'), '-o', str(tmp_path / 'o/')]) == 1
    assert "'mmcls::' config" in capsys.readouterr().out


def test_train_time_hints(mmselfsup_configs):
    cfg = Config.fromfile(
        osp.join(
            mmselfsup_configs, 'simclr', 'simclr_resnet18_1xb2-2e_in1k.py'
        )
    )
    with pytest.raises(UnknownConfigKeyError, match='migrate_mmselfsup.py'):
        check_not_mmselfsup(cfg, 'x.py')
    check_not_mmselfsup(dict(default_scope='mmssl'))
    with pytest.raises(UnknownConfigKeyError) as info:
        check_top_level_keys(['optimizer'])
    assert 'optim_wrapper = dict(' in str(info.value)
    assert 'Did you mean' not in str(info.value)


def _fake_imagenet(root):
    rng = np.random.default_rng(0)
    os.makedirs(osp.join(root, 'meta'))
    lines = []
    for i in range(2):
        os.makedirs(osp.join(root, 'train', f'n{i}'))
        name = f'n{i}/img.JPEG'
        array = rng.integers(0, 255, (40, 36, 3), dtype=np.uint8)
        Image.fromarray(array).save(osp.join(root, 'train', name))
        lines.append(f'{name} {i}')
    _write(osp.join(root, 'meta', 'train.txt'), '\n'.join(lines) + '\n')


def test_migrated_config_builds_dataset_sample_and_model(
    mmselfsup_configs, tmp_path
):
    from mmssl.registry import DATASETS, MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    migrate_path(mmselfsup_configs, str(tmp_path / 'out') + os.sep)
    cfg = Config.fromfile(
        str(tmp_path / 'out' / 'simclr' / 'simclr_resnet18_1xb2-2e_in1k.py')
    )
    data_root = str(tmp_path / 'in1k')
    _fake_imagenet(data_root)
    cfg.train_dataloader.dataset.data_root = data_root
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    sample = dataset[0]
    views = sample['inputs']
    assert len(views) == 2 and views[0].shape == (3, 32, 32)
    model = MODELS.build(cfg.model)
    torch.manual_seed(0)
    batch = model.data_preprocessor(
        dict(
            inputs=[torch.stack([v, v]) for v in views],
            data_samples=[sample['data_samples']] * 2,
        ),
        training=True,
    )
    losses = model.loss(batch['inputs'], batch['data_samples'])
    assert torch.isfinite(losses['loss'])
    # MMSelfSup's ResNet kept its last block's BN unzeroed
    assert model.backbone.layer4[-1].bn2.weight.abs().sum() > 0


def test_train_tool_names_the_migration_in_one_line(
    mmselfsup_configs, tmp_path, capsys
):
    tool = load_tool('train.py')
    src = osp.join(
        mmselfsup_configs, 'simclr', 'simclr_resnet18_1xb2-2e_in1k.py'
    )
    with pytest.raises(SystemExit) as info:
        tool.main([src, '--work-dir', str(tmp_path / 'w')])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "default_scope='mmselfsup'" in err[0]
    assert f'tools/misc/migrate_mmselfsup.py {src} -o' in err[0]
