"""'auto' neck/head sizes: a smaller or larger backbone alone gives a
consistent model, for every demo config (one forward + loss each)."""

import copy
import functools
import math

import pytest
import torch
from mmengine.dataset import pseudo_collate
from mmengine.registry import FUNCTIONS

from mmssl.config.derived_sizes import (
    backbone_out_channels,
    resolve_model_sizes,
)
from mmssl.registry import DATASETS, MODELS
from tests.test_configs.test_demo_configs import DEMO_CONFIGS, tiny_demo_cfg

#: The backbone width each override gives (what 'auto' must follow).
RESNET_DEPTH = 50  # bottleneck blocks: 4x the width of ResNet-18/34


def _other_arch(backbone: dict) -> dict:
    """A different-width backbone config (only the size knob changes)."""
    backbone = copy.deepcopy(backbone)
    if 'depth' in backbone:
        assert backbone['depth'] != RESNET_DEPTH
        backbone['depth'] = RESNET_DEPTH
        return backbone
    arch = dict(backbone['arch'])
    arch['embed_dims'] = arch['embed_dims'] // 2
    backbone['arch'] = arch
    return backbone


def test_auto_sizes_follow_backbone_neck_and_nesting():
    model = dict(
        backbone=dict(type='ResNet', depth=18),
        neck=dict(
            type='NonLinearNeck',
            in_channels='auto',
            hid_channels=8,
            out_channels=6,
        ),
        head=dict(
            type='LatentPredictHead',
            loss=dict(type='CosineSimilarityLoss'),
            predictor=dict(type='NonLinearNeck', in_channels='auto'),
        ),
    )
    out = resolve_model_sizes(model)
    assert out['neck']['in_channels'] == 512  # ResNet-18's last stage
    assert out['head']['predictor']['in_channels'] == 6  # neck's output
    assert model['neck']['in_channels'] == 'auto'  # a copy was resolved
    explicit = dict(model, neck=dict(model['neck'], in_channels=7))
    assert resolve_model_sizes(explicit)['neck']['in_channels'] == 7
    plain = dict(backbone=dict(type='ResNet', depth=18))
    assert resolve_model_sizes(plain) is plain
    with pytest.raises(ValueError, match='backbone'):
        resolve_model_sizes(dict(head=dict(in_channels='auto')))


def test_auto_arch_and_model_level_sizes():
    """BEiTV2Neck's ``backbone_arch`` and SparK's ``enc_dec_norm_dim``."""
    model = dict(
        backbone=dict(type='BEiTPretrainViT', arch='deit-tiny'),
        neck=dict(type='BEiTV2Neck', backbone_arch='auto'),
        head=dict(type='BEiTV2Head', embed_dims='auto'),
    )
    out = resolve_model_sizes(model)
    assert out['neck']['backbone_arch'] == dict(
        embed_dims=192,
        num_layers=12,
        depth=12,  # BEiTV2Neck checks num_layers but reads depth
        num_heads=3,
        feedforward_channels=768,
    )
    assert out['head']['embed_dims'] == 192
    assert MODELS.build(out['neck']).norm.normalized_shape == (192,)
    arch = dict(embed_dims=8, depth=2, num_heads=2, feedforward_channels=16)
    model['backbone']['arch'] = arch
    assert resolve_model_sizes(model)['neck']['backbone_arch'] == dict(
        arch, num_layers=2
    )
    model['backbone'] = dict(type='ResNet', depth=18)
    with pytest.raises(ValueError, match='backbone_arch explicitly'):
        resolve_model_sizes(model)
    spark = dict(
        backbone=dict(type='ResNet', depth=18),
        enc_dec_norm_dim='auto',
        neck=dict(type='SparKLightDecoder', feature_dim=16),
    )
    assert resolve_model_sizes(spark)['enc_dec_norm_dim'] == 512
    itpn = dict(
        backbone=dict(type='iTPNHiViT', arch='tiny'),
        neck=dict(embed_dim='auto', decoder_embed_dim='auto'),
    )
    assert resolve_model_sizes(itpn)['neck'] == dict(
        embed_dim=384, decoder_embed_dim=384
    )


def test_backbone_out_channels_reads_the_last_stage():
    class _Swin(torch.nn.Module):
        num_features = [8, 16, 32]
        embed_dims = 8

    assert backbone_out_channels(_Swin()) == 32
    with pytest.raises(ValueError, match="instead of 'auto'"):
        backbone_out_channels(torch.nn.Linear(2, 2))


def _arch_configs():
    out = []
    for path in DEMO_CONFIGS:
        if 'spark' in path:  # SparK's decoder width is a choice, not 'auto'
            continue
        cfg = tiny_demo_cfg(path, '/unused', '/unused')
        backbone = cfg.model.get('backbone') or {}
        if 'depth' in backbone or isinstance(backbone.get('arch'), dict):
            out.append(path)
    return out


def _batch(cfg, n=2):
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    collate_cfg = dict(cfg.train_dataloader.get('collate_fn') or {})
    collate = pseudo_collate
    if collate_cfg:
        fn = FUNCTIONS.get(collate_cfg.pop('type'))
        collate = functools.partial(fn, **collate_cfg)  # e.g. patch_size
    return collate([dataset[i] for i in range(n)])


@pytest.mark.slow
@pytest.mark.parametrize('path', _arch_configs())
def test_backbone_size_alone_gives_a_working_model(
    path, demo_data_root, tmp_path
):
    cfg = tiny_demo_cfg(path, demo_data_root, str(tmp_path))
    model_cfg = cfg.model.to_dict()
    model_cfg['backbone'] = _other_arch(model_cfg['backbone'])
    torch.manual_seed(0)
    model = MODELS.build(model_cfg)
    width = backbone_out_channels(model.backbone)
    old_width = backbone_out_channels(MODELS.build(cfg.model).backbone)
    assert width != old_width
    data = model.data_preprocessor(_batch(cfg), True)
    if 'odc' in path:
        # ODC's loss needs the k-means memory of ODCHook: check the
        # backbone -> neck -> head path instead
        x = data['inputs']
        x = x[0] if isinstance(x, (list, tuple)) else x
        logits = model.head(model.neck(model.backbone(x)))
        assert logits.shape[0] == x.shape[0]
        return
    losses = model(**data, mode='loss')
    total = sum(v for k, v in losses.items() if 'loss' in k)
    assert math.isfinite(float(total)), losses
