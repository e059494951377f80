"""Parameter counting: against direct sums, presets against sizes."""

import pytest
import torch
from torch import nn

from mmssl.apis import count_params, parameter_table
from mmssl.apis.param_count import (
    VIT_PRESETS,
    build_on_meta,
    dino_vit_presets,
    find_blocks,
)
from mmssl.config import load_config
from mmssl.registry import MODELS
from tests.support.tools import load_tool, tiny_config


def _direct(module: nn.Module) -> tuple[int, int]:
    total = sum(p.numel() for p in module.parameters())
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    return total, trainable


def test_count_params_shared_and_frozen():
    lin = nn.Linear(3, 4)  # 16 parameters
    model = nn.Sequential(lin, lin, nn.Linear(4, 2))  # shared: once
    model[2].weight.requires_grad_(False)
    assert count_params(model) == (16 + 10, 16 + 2)
    assert count_params(model) == _direct(model)


def test_table_matches_direct_count_mocov3():
    cfg = load_config(tiny_config('vit_tiny_classifier'))
    model = MODELS.build(cfg.model)
    rows = {r.name: r for r in parameter_table(model, per_block=True)}
    assert (rows[''].total, rows[''].trainable) == _direct(model)
    for part in ('backbone', 'neck', 'head', 'momentum_encoder'):
        sub = model.get_submodule(part)
        assert (rows[part].total, rows[part].trainable) == _direct(sub)
    # the EMA copy is counted but not trainable
    assert rows['momentum_encoder'].trainable == 0
    assert rows['momentum_encoder'].total > 0
    # blocks: one row per ViT layer, each equal to a direct count
    blocks = [r for r in rows.values() if r.note.startswith('block')]
    assert [b.name for b in blocks] == [
        'backbone.layers.0',
        'backbone.layers.1',
    ]
    assert blocks[0].total == _direct(model.backbone.layers[0])[0]
    # 2 layers of a 32-dim ViT with 64-dim FFN, computed by hand:
    # ln1 2*32, qkv 32*96+96, proj 32*32+32, ln2 2*32, ffn 32*64+64+64*32+32
    assert blocks[0].total == 64 + 3168 + 1056 + 64 + 4192


def test_find_blocks_resnet():
    model = MODELS.build(
        dict(type='ResNet_CIFAR', depth=18, base_channels=4, stem_channels=4)
    )
    names = [n for n, _ in find_blocks(model)]
    assert names == ['layer1', 'layer2', 'layer3', 'layer4']


@pytest.mark.parametrize('label,cfg,ref', VIT_PRESETS + dino_vit_presets())
def test_presets_match_published_sizes(label, cfg, ref):
    model = build_on_meta(MODELS.build, cfg)
    assert next(model.parameters()).device.type == 'meta'
    total, _ = count_params(model)
    assert abs(total - ref) / ref < 0.02, (label, total, ref)


def test_meta_build_counts_like_cpu_build():
    cfg = dict(
        type='VisionTransformer', arch='deit-tiny', img_size=64, patch_size=16
    )
    meta = build_on_meta(MODELS.build, cfg)
    cpu = MODELS.build(cfg)
    assert count_params(meta) == _direct(cpu)


def test_cli(capsys):
    tool = load_tool('analysis_tools/count_parameters.py')
    text = tool.main([tiny_config('simclr_tiny'), '--per-block'])
    model = MODELS.build(load_config(tiny_config('simclr_tiny')).model)
    total = sum(p.numel() for p in model.parameters())
    assert f'{total:,}' in text
    assert 'backbone.layer4' in text and 'ResNet_CIFAR' in text
    text = tool.main(['--presets'])
    assert 'dinov2-s' in text and 'dinov2-g' in text
    with pytest.raises(SystemExit):
        tool.main([])


def test_per_block_error_names_module():
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(ValueError, match='no list of blocks'):
        parameter_table(torch.nn.Module(), per_block=True)
    assert parameter_table(model, depth=0)[0].total == 6
