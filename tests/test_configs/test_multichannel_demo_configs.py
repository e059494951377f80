"""Every multi-channel demo (``configs/multichannel/*_demo.py``) trains 2
CPU iterations on a tiny synthetic 5-channel TIFF set, and gives one kNN
feature vector per image."""

import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmssl.registry import DATASETS, MODELS

pytest.importorskip('tifffile')

from tests.test_configs.test_demo_configs import (  # noqa: E402
    repoint_prefixes,
    train_two_iterations,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
MULTICHANNEL_DEMOS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(osp.join(ROOT, 'configs', 'multichannel', '*_demo.py'))
)


def test_multichannel_demo_exists():
    assert MULTICHANNEL_DEMOS, 'no configs/multichannel/*_demo.py'


@pytest.mark.slow
@pytest.mark.parametrize('path', MULTICHANNEL_DEMOS)
def test_multichannel_demo_trains(path, multichannel_data_root, tmp_path):
    # 6 images: 2 iterations
    train_two_iterations(
        path, 'data/multichannel', multichannel_data_root, 3, tmp_path
    )


@pytest.mark.parametrize('path', MULTICHANNEL_DEMOS)
def test_multichannel_demo_features_for_knn(path, multichannel_data_root):
    """The kNN data of the demo: labelled 5-channel images, one feature
    vector each, the same on a second call."""
    from mmengine.dataset import default_collate

    from mmssl.engine.runner.feature_extraction import batch_features

    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = cfg.test_dataloader.to_dict()
    root = {'data/multichannel': multichannel_data_root}
    loader = repoint_prefixes(loader, root)
    dataset = DATASETS.build(loader['dataset'])
    assert len(dataset) == 9  # 6 bank + 3 queries
    samples = [dataset[i] for i in (0, 2, 6, 8)]
    labels = [int(s['data_samples'].gt_label) for s in samples]
    assert labels == [0, 1, 0, 2]
    batch = default_collate(samples)
    assert batch['inputs'].shape == (4, 5, 32, 32)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.eval()
    feats = batch_features(model, batch)
    assert feats.dim() == 2 and feats.shape[0] == 4, feats.shape
    torch.testing.assert_close(feats, batch_features(model, batch))
    spread = (feats - feats.mean(0)).norm(dim=1) / feats.norm(dim=1).mean()
    assert (spread > 1e-3).all(), spread


def test_multichannel_custom_config(multichannel_data_root):
    """The user's-folder config: its dataset reads a folder of 5-channel
    TIFFs into two 224 px 5-channel views, and its ResNet-50 takes 5
    channels."""
    path = osp.join(
        ROOT,
        'configs',
        'multichannel',
        'simclr_resnet50_8xb64-coslr-200e_5ch_custom.py',
    )
    cfg = Config.fromfile(path)
    dataset_cfg = cfg.train_dataloader.dataset.to_dict()
    dataset_cfg['data_root'] = multichannel_data_root
    dataset = DATASETS.build(dataset_cfg)
    assert len(dataset) == 9  # train and val, 3 classes
    views = dataset[0]['inputs']
    assert [tuple(v.shape) for v in views] == [(5, 224, 224)] * 2
    cfg.model.backbone.norm_cfg = dict(type='BN')  # no process group
    model = MODELS.build(cfg.model)
    assert model.backbone.conv1.weight.shape[1] == 5
    assert model.data_preprocessor.mean.shape == (5, 1, 1)


@pytest.mark.parametrize(
    'name, local, patch, mask',
    [
        ('dinov2_vit-s14_8xb64-100e_5ch_custom.py', [98] * 8, 14, (2, 16, 16)),
        ('dino_vit-s16_8xb64-100e_5ch_custom.py', [96] * 10, 16, None),
    ],
)
def test_multichannel_dino_family_custom_configs(
    name, local, patch, mask, multichannel_data_root
):
    """The DINO / DINOv2 user's-folder configs: 2 global 224 px and the
    recipe's local 5-channel float views per TIFF (and DINOv2's iBOT masks
    of the patch grid from its collate), and a ViT-S whose patch embedding
    takes 5 channels, normalised per channel without a BGR swap."""
    from mmssl.registry import FUNCTIONS

    cfg = Config.fromfile(osp.join(ROOT, 'configs', 'multichannel', name))
    dataset_cfg = cfg.train_dataloader.dataset.to_dict()
    dataset_cfg['data_root'] = multichannel_data_root
    dataset = DATASETS.build(dataset_cfg)
    assert len(dataset) == 9
    samples = [dataset[0], dataset[1]]
    shapes = [tuple(v.shape) for v in samples[0]['inputs']]
    assert shapes == [(5, 224, 224)] * 2 + [(5, s, s) for s in local]
    assert all(v.dtype == torch.float32 for v in samples[0]['inputs'])
    collate = cfg.train_dataloader.collate_fn.to_dict()
    collate_fn = FUNCTIONS.get(collate.pop('type').split('.')[-1])
    batch = collate_fn(samples, **collate)
    assert batch['inputs'][0].shape == (2, 5, 224, 224)
    got = batch['data_samples'][0].get('mask', None)
    assert (got if got is None else tuple(got.shape)) == mask
    model = MODELS.build(cfg.model)
    weight = model.backbone.patch_embed.projection.weight
    assert weight.shape == (384, 5, patch, patch)
    assert model.data_preprocessor.mean.shape == (5, 1, 1)
    assert not model.data_preprocessor._channel_conversion  # no BGR swap
