"""visualize_attention: maps equal the model's own attention; files."""

import glob
import os.path as osp

import cv2
import pytest
import torch

from mmssl.apis import init_model
from mmssl.visualization.attention import (
    cls_attention_maps,
    last_block_attention,
)
from tests.support.tools import load_tool, tiny_config


def test_attention_is_what_the_block_used():
    backbone = init_model(tiny_config('vit_tiny_classifier')).backbone
    x = torch.randn(2, 3, 32, 32)
    attn, tokens = last_block_attention(backbone, x)
    assert attn.shape == (2, 4, 65, 65) and tokens.shape == (2, 65, 32)
    assert torch.allclose(attn.sum(-1), torch.ones(2, 4, 65), atol=1e-5)
    # rebuild the attention module's output from our maps and its values
    caught = {}
    mod = backbone.layers[-1].attn
    h1 = mod.qkv.register_forward_hook(
        lambda m, i, o: caught.__setitem__('qkv', o)
    )
    h2 = mod.register_forward_hook(
        lambda m, i, o: caught.__setitem__('out', o)
    )
    backbone(x)
    h1.remove()
    h2.remove()
    v = caught['qkv'].reshape(2, 65, 3, 4, 8).permute(2, 0, 3, 1, 4)[2]
    mixed = (attn @ v).transpose(1, 2).reshape(2, 65, 32)
    assert torch.allclose(mod.proj(mixed), caught['out'], atol=1e-5)
    maps = cls_attention_maps(backbone, x, (8, 8))
    assert maps.shape == (2, 4, 8, 8)
    assert torch.allclose(
        torch.from_numpy(maps).flatten(2), attn[:, :, 0, 1:], atol=1e-6
    )


def test_cli_files_and_non_vit_error(demo_data_root, tmp_path):
    img = sorted(glob.glob(osp.join(demo_data_root, 'val', '7', '*')))[0]
    tool = load_tool('analysis_tools/visualize_attention.py')
    out = tool.main(
        [
            tiny_config('vit_tiny_classifier'),
            img,
            '--output-dir',
            str(tmp_path),
        ]
    )
    heads = sorted(glob.glob(str(tmp_path / 'attention_head*.png')))
    assert len(heads) == out['num_heads'] == 4
    for f in heads:
        assert cv2.imread(f).shape == (32, 32, 3)
    assert cv2.imread(str(tmp_path / 'attention.png')) is not None
    pca = cv2.imread(str(tmp_path / 'pca.png'))
    assert pca is not None and pca.shape[2] == 3
    assert out['pca'].shape == (8, 8, 3)
    with pytest.raises(TypeError, match='not a ViT'):
        tool.main(
            [
                tiny_config('simclr_tiny'),
                img,
                '--output-dir',
                str(tmp_path / 'x'),
            ]
        )
