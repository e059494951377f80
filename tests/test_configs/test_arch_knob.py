"""One knob for the model size in every full-size config.

``model.backbone.arch=tiny`` (ViT-like; ``deit-tiny`` where mmpretrain's
arch table has no ``tiny``) or ``model.backbone.depth=18`` (ResNet; 50
for a ResNet-18 config) alone must give a model that runs: its neck and
head input sizes follow the backbone (``'auto'``,
:mod:`mmssl.config.derived_sizes`). For each ImageNet, custom-data
and linear-probe config this builds the resized model on the CPU and
runs one loss on two random images that went through the config's own
training pipeline (no files are read).
``*_demo.py`` configs have the same check in test_derived_sizes.py.

Left out, each for a reason:

* kNN benchmark configs: a frozen backbone and no neck or head, so
  nothing has to follow it;
* configs of other toolboxes (``benchmarks/mmsegmentation``,
  ``benchmarks/mmdetection``): mmseg/mmdet build them;
* ``*_custom-cpu.py``: already the tiny arch, nothing smaller to name;
* ``dinov3_vit-s16_*``: ``DINOv3ViT`` has no arch smaller than small; the
  ``dinov3_vit-b16_*`` configs run the same model with ``arch=small``;
* configs whose model is that of an earlier config in their folder
  (e.g. a ``*_custom-small`` preset of its ImageNet config): skipped,
  as their first config runs the same check.

What runs is a light copy of the resized model: the named arch as a dict
with 1 layer (more where ``out_indices`` or ``frozen_stages`` name more;
one block per stage where there are stages), whose resolved neck and
head sizes are checked to equal those of the named arch.

MixMIM's arch table starts at base, so MixMIM gets a small arch dict.
Pretrained target networks (DALL-E, VQ-KD, CLIP) are replaced by the
same modules with random weights (CLIP by ``StandInCLIPTarget``): their
size does not depend on the backbone.
"""

import copy
import functools
import glob
import json
import math
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.dataset import Compose, pseudo_collate
from mmengine.registry import FUNCTIONS

from mmssl.config import load_config
from mmssl.config.derived_sizes import (
    MODEL_SIZE_KEYS,
    SIZE_KEYS,
    _build_backbone,
    backbone_out_channels,
    resolve_model_sizes,
)
from mmssl.datasets.transforms.mixed_resolution_crop import (
    size_index_scope,
)
from mmssl.registry import MODELS, TRANSFORMS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
RESNETS = ('ResNet', 'ResNetV1c', 'ResNetV1d', 'ResNet_CIFAR', 'SparseResNet')
#: The arch a user names for a tiny model, in order of preference.
TINY_NAMES = ('tiny', 'deit-tiny', 'small')
#: Backbones whose arch table has no small entry: a small arch dict.
ARCH_DICTS = {
    'MixMIMPretrainTransformer': dict(
        embed_dims=32, depths=[1, 1, 2, 1], num_heads=[1, 2, 4, 8]
    ),
}
#: Layers of the light copy that runs (more where frozen_stages or
#: out_indices name more).
LIGHT_LAYERS = 1
#: Pretrained target networks -> the same modules with random weights
#: (smaller where their width is free; CLIP: ``StandInCLIPTarget``).
RANDOM_TARGETS = {
    'PretrainedDALLETarget': dict(type='DALL-E', n_hid=16, n_blk_per_group=1),
    'PretrainedVQKDTarget': dict(type='VQKD'),
    'PretrainedCLIPTarget': dict(
        type='StandInCLIPTarget', img_size=224, patch_size=16, out_dims=512
    ),
}


def _resized(backbone: dict) -> dict:
    """The backbone config with only its size knob changed (ResNet-18
    configs go to depth 50, the others to depth 18 or a tiny arch)."""
    backbone = copy.deepcopy(backbone)
    if backbone['type'] in RESNETS:
        backbone['depth'] = 50 if backbone['depth'] == 18 else 18
        return backbone
    if backbone['type'] in ARCH_DICTS:
        backbone['arch'] = ARCH_DICTS[backbone['type']]
        return backbone
    zoo = MODELS.get(backbone['type']).arch_zoo
    name = next(n for n in TINY_NAMES if n in zoo)
    assert name != backbone.get('arch'), 'no smaller arch to try'
    backbone['arch'] = name
    return backbone


def _light(backbone: dict) -> dict:
    """The same width with fewer layers (the arch as a dict), to run."""
    arch = backbone.get('arch')
    if not isinstance(arch, str):
        return backbone
    arch = dict(MODELS.get(backbone['type']).arch_zoo[arch])
    if 'depths' in arch:  # hierarchical: one block per stage
        arch['depths'] = [1] * len(arch['depths'])
        return dict(backbone, arch=arch)
    # keep the layers that frozen_stages or out_indices name
    indices = backbone.get('out_indices', [])
    indices = indices if isinstance(indices, (list, tuple)) else [indices]
    used = [backbone.get('frozen_stages') or 0]
    used += [i + 1 if i >= 0 else -i for i in indices]
    arch['num_layers'] = min(arch['num_layers'], max(LIGHT_LAYERS, *used))
    return dict(backbone, arch=arch)


def _target(target: dict) -> dict:
    """A pretrained target network with random weights instead."""
    if target.get('type') not in RANDOM_TARGETS:
        return target
    target = dict(target, **RANDOM_TARGETS[target['type']])
    target.pop('init_cfg', None)
    target.pop('tokenizer_path', None)
    if target['type'] == 'VQKD':  # a light BEiTViT encoder
        target['encoder_config'] = dict(
            target['encoder_config'],
            arch=dict(
                embed_dims=64,
                num_layers=1,
                num_heads=2,
                feedforward_channels=128,
            ),
        )
    return target


def _sizes(cfg, path: str = '') -> dict:
    """Every neck/head input size in a resolved model config."""
    out = {}
    for key, value in cfg.items():
        if key == 'backbone':
            continue
        if isinstance(value, dict):
            out.update(_sizes(value, f'{path}{key}.'))
        elif key in SIZE_KEYS + MODEL_SIZE_KEYS + ('embed_dims',):
            out[path + key] = value
    return out


FOLDER_CONFIG = osp.join('configs', 'custom', 'image_folder.py')


def _paths() -> list:
    """The configs this file tests (see the module docstring)."""
    files = glob.glob(osp.join(ROOT, 'configs', '**', '*.py'), recursive=True)
    out = []
    for path in sorted(osp.relpath(p, ROOT) for p in files):
        parts = path.split(osp.sep)
        if not (
            '_base_' in parts
            or path == FOLDER_CONFIG  # needs RECIPE; its own test file
            or path.endswith('_demo.py')
            or {'volumetric', 'multichannel', 'knn'} & set(parts)
            or {'mmsegmentation', 'mmdetection'} & set(parts)
            or osp.basename(path).startswith('dinov3_vit-s16')
            or path.endswith('_custom-cpu.py')
        ):
            out.append(path)
    return out


@functools.lru_cache(maxsize=None)
def _case(path: str) -> tuple:
    """``(config, resized model, key)``; equal keys: the same check."""
    cfg = load_config(osp.join(ROOT, path))
    model = cfg.model.to_dict()
    model['backbone'] = _resized(model['backbone'])
    if model.get('target_generator'):
        model['target_generator'] = _target(model['target_generator'])
    return cfg, model, json.dumps(model, sort_keys=True, default=str)


def _first_with_same_model(path: str) -> str:
    """The first config of ``path``'s folder with the same resized model
    (e.g. a ``*_custom-small`` preset has its ImageNet config's)."""
    key = _case(path)[2]
    folder = osp.dirname(path)
    for other in _paths():
        if osp.dirname(other) == folder and _case(other)[2] == key:
            return other
    return path


def _batch(cfg, n: int = 2) -> list:
    """``n`` random 256x320 images through the training pipeline."""
    dataset = cfg.train_dataloader.dataset
    while 'pipeline' not in dataset:  # wrappers such as RepeatDataset
        dataset = dataset.dataset
    pipeline = Compose(
        [
            TRANSFORMS.build(t)
            for t in dataset.pipeline
            if not t['type'].startswith('LoadImage')
        ]
    )
    rng = np.random.default_rng(0)
    samples = []
    for i in range(n):
        with size_index_scope(0):  # MixedResolutionMultiCrop's size pair
            img = rng.integers(0, 256, (256, 320, 3), dtype=np.uint8)
            samples.append(
                pipeline(
                    dict(
                        img=img,
                        img_shape=img.shape[:2],
                        ori_shape=img.shape[:2],
                        img_path=f'{i}.jpg',
                        sample_idx=i,
                        gt_label=i % 2,
                    )
                )
            )
    collate_cfg = dict(cfg.train_dataloader.get('collate_fn') or {})
    collate_cfg.pop('_scope_', None)
    collate = pseudo_collate
    if collate_cfg:
        fn = FUNCTIONS.get(collate_cfg.pop('type'))
        collate = functools.partial(fn, **collate_cfg)
    return collate(samples)


@pytest.mark.slow
@pytest.mark.parametrize('path', _paths())
def test_backbone_size_knob_alone_gives_a_working_model(path):
    first = _first_with_same_model(path)
    if first != path:
        pytest.skip(f'same model as {first}')
    cfg, model_cfg, _ = _case(path)
    width = backbone_out_channels(_build_backbone(cfg.model.backbone))
    light_cfg = dict(model_cfg, backbone=_light(model_cfg['backbone']))
    sizes = _sizes(resolve_model_sizes(model_cfg))
    assert _sizes(resolve_model_sizes(light_cfg)) == sizes
    torch.manual_seed(0)
    model = MODELS.build(light_cfg)
    assert backbone_out_channels(model.backbone) != width
    data = model.data_preprocessor(_batch(cfg), True)
    if model_cfg['type'] == 'ODC':
        # ODC's loss needs the k-means memory of ODCHook: check the
        # backbone -> neck -> head path instead
        x = data['inputs']
        x = x[0] if isinstance(x, (list, tuple)) else x
        out = model.head(model.neck(model.backbone(x)))
        out = out[-1] if isinstance(out, (list, tuple)) else out
        assert out.shape == (2, model_cfg['head']['num_classes'])
        return
    with torch.no_grad():
        losses = model(**data, mode='loss')
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert math.isfinite(float(total)), losses
