"""The mmsegmentation / mmdetection configs of configs/benchmarks/.

Those packages are not installed here, so the configs are run as plain
Python (their ``_base_`` is not resolved) and checked against what
``tools/model_converters/mmssl_to_mmseg.py`` writes: the backbone options
an exported mmssl ViT-S/16 needs, and the ``backbone.`` prefix of an
exported ResNet.
"""

import glob
import os.path as osp
import runpy

import pytest
import torch

from mmssl.checkpoint.layouts.mmseg import (
    mmssl_to_mmdet_resnet,
    mmssl_to_mmseg_vit,
)
from mmssl.models.backbones import DINOVisionTransformer

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BENCH = osp.join(ROOT, 'configs', 'benchmarks')
# Base configs that exist in onedl-mmsegmentation 1.4.2 / onedl-mmdetection
# 3.5.1 (mmseg/.mim/configs/..., mmdet/.mim/configs/...), read there.
BASES = {
    'mmseg::vit/vit_deit-s16-ln_mln_upernet_8xb2-160k_ade20k-512x512.py',
    'mmseg::fcn/fcn_r50-d8_4xb4-20k_voc12aug-512x512.py',
    'mmdet::mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py',
}
CONFIGS = sorted(
    glob.glob(osp.join(BENCH, 'mmsegmentation', '*.py'))
    + glob.glob(osp.join(BENCH, 'mmdetection', '*.py'))
)


@pytest.mark.parametrize('path', CONFIGS, ids=osp.basename)
def test_other_toolbox_config(path):
    cfg = runpy.run_path(path)
    assert cfg['_base_'] in BASES
    backbone = cfg['model']['backbone']
    if 'vit' in osp.basename(path):
        with torch.device('meta'):
            vit = DINOVisionTransformer(arch='small', patch_size=16)
        _, options = mmssl_to_mmseg_vit(vit.state_dict())
        for key in ('embed_dims', 'patch_size', 'patch_bias', 'final_norm'):
            assert backbone[key] == options[key], key
        assert backbone['mlp_ratio'] == options['mlp_ratio']
        assert not options['pre_norm']
        assert cfg['model']['pretrained'].endswith('.pth')
    else:
        init = backbone['init_cfg']
        assert init['type'] == 'Pretrained'
        # the prefix the converter writes by default
        assert init['prefix'] == mmssl_to_mmdet_resnet.__defaults__[0]
        assert backbone.get('type', 'ResNet') == 'ResNet'  # plain stem
