"""The crop side the evaluation tools (kNN and t-SNE on folders) pick for
a config: a flag, the ViT's img_size, else the training crop."""

import os.path as osp

from mmengine.config import ConfigDict

from mmssl.config import load_config
from mmssl.evaluation.folders import eval_img_size, train_crop_size

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _cfg(rel):
    return load_config(osp.join(ROOT, 'configs', rel))


def test_eval_size_follows_the_training_crop():
    # a ResNet demo on the 32 px digits (crop nested in MultiView): 32,
    # not 224 (which made kNN on folders slow and wrong)
    simclr = _cfg('simclr/simclr_resnet18-w16_1xb64-10e_demo.py')
    assert train_crop_size(simclr) == 32
    assert eval_img_size(simclr) == (32, 'the training crop of the config')
    # a ViT: its img_size; a flag wins
    vit = _cfg('dinov2/dinov2_vit-tiny-p8_1xb64-10e_shapes_demo.py')
    assert eval_img_size(vit) == (64, "the backbone's img_size")
    assert eval_img_size(simclr, 48) == (48, 'as requested')
    # MultiCrop behind a dataset wrapper
    wrapped = dict(
        model=dict(backbone=dict(type='ResNet')),
        train_dataloader=dict(
            dataset=dict(
                type='RepeatDataset',
                dataset=dict(
                    pipeline=[dict(type='MultiCrop', global_size=96)]
                ),
            )
        ),
    )
    assert eval_img_size(ConfigDict(wrapped))[0] == 96
    bare = ConfigDict(model=dict(backbone=dict(type='ResNet')))
    assert eval_img_size(bare)[0] == 224
