"""The dense probes' random init is the one training starts from: a
config's init rules (Xavier...) apply, weight files never load."""

import math

from mmengine.config import Config

from mmssl.evaluation.dense_features import (
    build_dense_backbone,
    random_init_cfg,
)

XAVIER = dict(type='Xavier', layer='Linear', distribution='uniform')
PRETRAINED = dict(type='Pretrained', checkpoint='/nowhere/weights.pth')


def test_weight_files_are_dropped_init_rules_kept():
    assert random_init_cfg(None) is None
    assert random_init_cfg(PRETRAINED) is None
    assert random_init_cfg([XAVIER, PRETRAINED]) == [XAVIER]
    assert random_init_cfg(XAVIER) == [XAVIER]


def test_config_xavier_rule_shapes_the_random_backbone():
    cfg = Config.fromfile(
        'configs/dinov2/dinov2_vit-tiny-p8_1xb64-40e_dense_demo.py'
    )
    cfg.model.backbone.init_cfg = [XAVIER, PRETRAINED]  # no file is read
    backbone = build_dense_backbone(cfg)
    backbone.init_weights()
    fc = backbone.layers[0].ffn.layers[0][0]  # Linear 64 -> 256
    # Xavier-uniform: std = sqrt(2 / (fan_in + fan_out)); the ViT's own
    # init (truncated normal) has std 0.02
    want = math.sqrt(2 / (64 + 256))
    assert abs(float(fc.weight.std()) - want) < 0.1 * want
