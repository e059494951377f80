"""mmssl backbones -> mmsegmentation / mmdetection key layouts.

mmsegmentation and mmdetection are not installed in CI, so their key
names are written out below from their sources, and the ViT forward is
checked against a stand-in built from the same mmcv bricks
(``MultiheadAttention``, ``FFN``) that mmseg's ``TransformerEncoderLayer``
wraps, with mmseg's module names.
"""

import os.path as osp
import runpy
import sys

import pytest
import torch
from mmcv.cnn.bricks.transformer import FFN, MultiheadAttention
from mmpretrain.models import ResNet
from torch import nn

from mmssl.checkpoint.layouts.mmseg import (
    mmseg_vit_keys,
    mmssl_to_mmdet_resnet,
    mmssl_to_mmseg_vit,
    resnet_keys,
)
from mmssl.models.backbones import DINOVisionTransformer

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
TOOL = osp.join(ROOT, 'tools/model_converters/mmssl_to_mmseg.py')
EMBED, HEADS, DEPTH = 16, 2, 2

# The state-dict keys of a 2-block mmseg VisionTransformer(final_norm=True,
# patch_bias=True), read from mmsegmentation 1.2.2 and onedl-mmsegmentation
# 1.4.2, mmseg/models/backbones/vit.py (identical there): PatchEmbed
# ``projection``; TransformerEncoderLayer: build_norm_layer(postfix=1/2)
# -> ``ln1``/``ln2``, ``self.attn = MultiheadAttention`` (mmcv, which holds
# torch's ``nn.MultiheadAttention`` as ``attn``), ``self.ffn = FFN`` (mmcv:
# ``layers = Sequential(Sequential(Linear, act, drop), Linear, drop)``);
# the final norm is build_norm_layer(postfix=1) -> ``ln1``.
MMSEG_VIT_KEYS = [
    'cls_token',
    'pos_embed',
    'patch_embed.projection.weight',
    'patch_embed.projection.bias',
    *[
        f'layers.{i}.{name}'
        for i in range(DEPTH)
        for name in (
            'ln1.weight',
            'ln1.bias',
            'attn.attn.in_proj_weight',
            'attn.attn.in_proj_bias',
            'attn.attn.out_proj.weight',
            'attn.attn.out_proj.bias',
            'ln2.weight',
            'ln2.bias',
            'ffn.layers.0.0.weight',
            'ffn.layers.0.0.bias',
            'ffn.layers.1.weight',
            'ffn.layers.1.bias',
        )
    ],
    'ln1.weight',
    'ln1.bias',
]


class MMSegBlock(nn.Module):
    """mmseg's ``TransformerEncoderLayer.forward`` with its names."""

    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(EMBED, eps=1e-6)
        self.attn = MultiheadAttention(EMBED, HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(EMBED, eps=1e-6)
        self.ffn = FFN(EMBED, 4 * EMBED, act_cfg=dict(type='GELU'))

    def forward(self, x):
        x = self.attn(self.ln1(x), identity=x)
        return self.ffn(self.ln2(x), identity=x)


class MMSegViT(nn.Module):
    """mmseg's ``VisionTransformer.forward`` (same grid, final norm)."""

    def __init__(self, patch: int, grid: int) -> None:
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.projection = nn.Conv2d(3, EMBED, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, EMBED))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + grid**2, EMBED))
        self.layers = nn.ModuleList(MMSegBlock() for _ in range(DEPTH))
        self.ln1 = nn.LayerNorm(EMBED, eps=1e-6)

    def forward(self, x):
        x = self.patch_embed.projection(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(len(x), -1, -1), x], 1)
        x = x + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return self.ln1(x)


def vit(regs=0, ffn_type=None, seed=0):
    torch.manual_seed(seed)
    arch = dict(embed_dims=EMBED, num_layers=DEPTH, num_heads=HEADS)
    arch['feedforward_channels'] = 4 * EMBED
    if ffn_type:
        arch['ffn_type'] = ffn_type
    model = DINOVisionTransformer(
        arch=arch,
        img_size=32,
        patch_size=8,
        num_register_tokens=regs,
        out_type='raw',
    )
    with torch.no_grad():  # LayerScale too: folding must be exact
        for p in model.parameters():
            p.normal_(0, 0.2)
    return model.eval()


def test_vit_keys_are_mmseg_names_and_compute_the_same():
    src = vit()
    assert any('gamma1' in k for k in src.state_dict())
    out, options = mmssl_to_mmseg_vit(src.state_dict())
    assert list(out) == MMSEG_VIT_KEYS or set(out) == set(MMSEG_VIT_KEYS)
    assert sorted(mmseg_vit_keys(DEPTH)) == sorted(MMSEG_VIT_KEYS)
    assert options == dict(
        embed_dims=EMBED,
        num_layers=DEPTH,
        patch_size=8,
        mlp_ratio=4.0,
        patch_bias=True,
        final_norm=True,
        pre_norm=False,
        pretrain_grid=4,
    )
    target = MMSegViT(patch=8, grid=4).eval()
    # strict: every name and every shape of the target, nothing else
    target.load_state_dict(out, strict=True)
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        want = src(x)[-1]
        got = target(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_vit_layouts_mmseg_cannot_hold_are_refused():
    with pytest.raises(ValueError, match='register tokens'):
        mmssl_to_mmseg_vit(vit(regs=1).state_dict())
    with pytest.raises(ValueError, match='SwiGLU'):
        mmssl_to_mmseg_vit(vit(ffn_type='swiglu_fused').state_dict())
    with pytest.raises(ValueError, match='RoPE'):
        mmssl_to_mmseg_vit({'rope_embed.periods': torch.ones(4)})
    sd = vit().state_dict()
    with pytest.raises(KeyError, match='weird'):
        mmssl_to_mmseg_vit({**sd, 'layers.0.weird.weight': torch.zeros(1)})
    del sd['layers.1.ln2.bias']
    with pytest.raises(KeyError, match=r"missing \['layers.1.ln2.bias'\]"):
        mmssl_to_mmseg_vit(sd)


# mmdetection 3.3 / onedl-mmdetection 3.5.1 mmdet/models/backbones/
# resnet.py (ResNet, plain stem): ``conv1`` + ``norm1_name`` = 'bn1';
# ``res_layer = make_res_layer`` added as ``layer{i}``; Bottleneck
# ``conv1..3`` with norms ``bn1..3``; ``downsample = Sequential(conv,
# norm)``. The first block of ResNet-50, and its stem:
MMDET_RESNET50_FIRST_KEYS = [
    'conv1.weight',
    *[f'bn1.{n}' for n in ('weight', 'bias', 'running_mean', 'running_var')],
    'layer1.0.conv1.weight',
    'layer1.0.conv2.weight',
    'layer1.0.conv3.weight',
    'layer1.0.bn3.running_var',
    'layer1.0.downsample.0.weight',
    'layer1.0.downsample.1.weight',
    'layer1.0.downsample.1.running_mean',
]


@pytest.mark.parametrize('depth', [18, 50])
def test_resnet_gets_the_backbone_prefix(depth):
    sd = ResNet(depth=depth).state_dict()
    assert sorted(resnet_keys(depth)) == sorted(sd)
    if depth == 50:
        assert set(MMDET_RESNET50_FIRST_KEYS) <= set(sd)
    out, found = mmssl_to_mmdet_resnet(sd)
    assert found == depth
    assert list(out) == ['backbone.' + k for k in sd]
    assert all(out['backbone.' + k] is v for k, v in sd.items())
    with pytest.raises(KeyError, match=r"unexpected \['fc.weight'\]"):
        mmssl_to_mmdet_resnet({**sd, 'fc.weight': torch.zeros(1)})
    del sd['layer2.0.downsample.0.weight']
    with pytest.raises(KeyError, match='layer2.0.downsample.0.weight'):
        mmssl_to_mmdet_resnet(sd)
    with pytest.raises(ValueError, match='no ResNet'):
        mmssl_to_mmdet_resnet({'layer1.0.conv1.weight': torch.zeros(1)})


def run_tool(*argv):
    old = sys.argv
    sys.argv = [TOOL, *map(str, argv)]
    try:
        return runpy.run_path(TOOL, run_name='tool')['main']()
    finally:
        sys.argv = old


def test_tool_exports_teacher_vit_and_resnet(tmp_path, capsys):
    src = vit()
    sd = src.state_dict()
    state = {'teacher.backbone.' + k: v for k, v in sd.items()}
    state.update({'backbone.' + k: v * 0 for k, v in sd.items()})
    ckpt = tmp_path / 'epoch_1.pth'
    torch.save({'state_dict': state, 'meta': {}}, ckpt)
    run_tool(ckpt, tmp_path / 'vit.pth')
    saved = torch.load(tmp_path / 'vit.pth', weights_only=True)
    assert sorted(saved['state_dict']) == sorted(MMSEG_VIT_KEYS)
    want = mmssl_to_mmseg_vit(sd)[0]  # the teacher's, not the zeros
    assert torch.equal(saved['state_dict']['cls_token'], want['cls_token'])
    assert saved['meta']['patch_bias'] is True
    assert 'patch_bias' in capsys.readouterr().out

    res = ResNet(depth=18).state_dict()
    ckpt = tmp_path / 'mocov2.pth'
    torch.save(
        {'state_dict': {'backbone.' + k: v for k, v in res.items()}}, ckpt
    )
    run_tool(ckpt, tmp_path / 'r18.pth')
    saved = torch.load(tmp_path / 'r18.pth', weights_only=True)
    assert sorted(saved['state_dict']) == sorted('backbone.' + k for k in res)
    assert saved['meta']['depth'] == 18
