"""Warm start from tiny models built from the real transformers and timm
classes: what ``save_file(model.state_dict())`` / ``torch.save`` of a live
model gives must load exactly and compute the same tokens.

Skipped where transformers or timm is not installed (it is not in CI; the
key layouts are also covered with synthetic state dicts in
test_warm_start.py and test_dinov3_layout.py). Locally::

    pip install --target /tmp/interop_pkgs transformers timm
    PYTHONPATH=$PWD:/tmp/interop_pkgs python -m pytest -n 0 \\
        tests/test_checkpoint/test_interop_real.py
"""

import copy

import pytest
import torch
from torch import nn

from mmssl.checkpoint.warm_start import WarmStartError, apply_warm_start
from mmssl.models.backbones import DINOv3ViT, DINOVisionTransformer

WIDTH, DEPTH, HEADS, REGS = 32, 2, 2, 2


class Algo(nn.Module):
    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.teacher = nn.ModuleDict(dict(backbone=copy.deepcopy(backbone)))


def randomise(model: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():  # LayerScale, norms and biases all random
        for p in model.parameters():
            p.normal_(0, 0.2)
    return model.eval()


def save_live(model: nn.Module, folder) -> str:
    from safetensors.torch import save_file

    folder.mkdir(exist_ok=True)
    path = str(folder / 'model.safetensors')
    sd = model.state_dict()
    save_file({k: v.contiguous() for k, v in sd.items()}, path)
    return path


def tokens(backbone: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return backbone.eval()(x)[-1]


@pytest.mark.parametrize('glu', [False, True])
def test_transformers_dinov2_live_state_dict(tmp_path, glu):
    tf = pytest.importorskip('transformers')
    cfg = tf.Dinov2WithRegistersConfig(
        hidden_size=WIDTH,
        num_hidden_layers=DEPTH,
        num_attention_heads=HEADS,
        mlp_ratio=2,
        image_size=32,
        patch_size=8,
        use_swiglu_ffn=glu,
        num_register_tokens=REGS,
    )
    hf = randomise(tf.Dinov2WithRegistersModel(cfg))
    path = save_live(hf, tmp_path / 'hf')
    arch = dict(
        embed_dims=WIDTH,
        num_layers=DEPTH,
        num_heads=HEADS,
        feedforward_channels=2 * WIDTH,
        ffn_type='swiglu_fused' if glu else 'origin',
    )
    algo = Algo(
        DINOVisionTransformer(
            arch=arch,
            img_size=32,
            patch_size=8,
            num_register_tokens=REGS,
            out_type='raw',
        )
    )
    report = apply_warm_start(algo, dict(checkpoint=path))
    assert report.missing == [] and report.unexpected == []
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        want = hf(pixel_values=x).last_hidden_state  # (B, 1 + R + N, C)
    torch.testing.assert_close(tokens(algo.backbone, x), want)


def dinov3(glu: bool, rope_base: float) -> DINOv3ViT:
    arch = dict(
        embed_dims=WIDTH,
        num_layers=DEPTH,
        num_heads=HEADS,
        # mmssl's SwiGLU hidden width is 2/3 of this, aligned to 8
        feedforward_channels=3 * WIDTH if glu else 2 * WIDTH,
        ffn_type='swiglu' if glu else 'mlp',
    )
    return DINOv3ViT(
        arch=arch,
        num_register_tokens=REGS,
        rope_base=rope_base,
        out_type='raw',
    )


@pytest.mark.parametrize('glu,theta', [(False, 100.0), (True, 1000.0)])
def test_transformers_dinov3_live_state_dict(tmp_path, glu, theta):
    tf = pytest.importorskip('transformers')
    cfg = tf.DINOv3ViTConfig(
        hidden_size=WIDTH,
        num_hidden_layers=DEPTH,
        num_attention_heads=HEADS,
        intermediate_size=2 * WIDTH,
        image_size=64,
        patch_size=16,
        num_register_tokens=REGS,
        use_gated_mlp=glu,
        hidden_act='silu' if glu else 'gelu',
        rope_theta=theta,
    )
    hf = randomise(tf.DINOv3ViTModel(cfg))
    assert any(k.startswith('model.layer.') for k in hf.state_dict())
    path = save_live(hf, tmp_path / 'hf')
    cfg.save_pretrained(str(tmp_path / 'hf'))  # config.json: rope_theta
    algo = Algo(dinov3(glu, rope_base=theta))
    report = apply_warm_start(algo, dict(checkpoint=path))
    assert report.missing == [] and report.unexpected == []
    x = torch.randn(2, 3, 64, 48)
    with torch.no_grad():
        want = hf(pixel_values=x).last_hidden_state
    torch.testing.assert_close(tokens(algo.backbone, x), want)
    if theta != 100.0:  # a backbone built with another base is refused
        with pytest.raises(WarmStartError, match=f'rope_base={theta}'):
            apply_warm_start(Algo(dinov3(glu, 100.0)), dict(checkpoint=path))


@pytest.mark.parametrize(
    'name',
    [
        'vit_small_patch16_dinov3_qkvb',
        'vit_small_plus_patch16_dinov3_qkvb',
        'vit_small_patch16_dinov3',
    ],
)
def test_timm_dinov3_models(tmp_path, name):
    timm = pytest.importorskip('timm')
    model = timm.create_model(
        name, depth=DEPTH, embed_dim=WIDTH, num_heads=HEADS, num_classes=0
    )
    model = randomise(model)
    path = str(tmp_path / 'timm.pth')
    torch.save(model.state_dict(), path)
    glu = 'plus' in name
    hidden = model.state_dict()['blocks.0.mlp.fc2.weight'].shape[1]
    arch = dict(
        embed_dims=WIDTH,
        num_layers=DEPTH,
        num_heads=HEADS,
        feedforward_channels=hidden * 3 // 2 if glu else hidden,
        ffn_type='swiglu' if glu else 'mlp',
        qkv_bias='qkvb' in name,
    )
    algo = Algo(
        DINOv3ViT(
            arch=arch,
            num_register_tokens=4,
            mask_k_bias='qkvb' in name,
            out_type='raw',
        )
    )
    # timm keeps neither mask_token nor the periods (base 100, computed)
    report = apply_warm_start(algo, dict(checkpoint=path, min_match=0.9))
    assert report.missing == ['mask_token', 'rope_embed.periods']
    assert report.unexpected == []
    x = torch.randn(2, 3, 64, 48)
    with torch.no_grad():
        want = model.forward_features(x)
    torch.testing.assert_close(tokens(algo.backbone, x), want)
