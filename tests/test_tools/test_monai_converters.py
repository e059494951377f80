"""mmssl 3D backbones -> MONAI networks: strict loads and equal outputs."""

import pytest
import torch
from monai.networks.nets import SwinUNETR, ViT

from mmssl.models.backbones import SwinViT3D, VisionTransformer3D
from tests.support.tools import load_tool

SWIN = dict(feature_size=12, depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2))
VIT = dict(arch=dict(embed_dims=32, num_layers=2, num_heads=4), img_size=16)


def _algorithm_checkpoint(backbone, path):
    """Weights as an algorithm saves them: student and EMA teacher."""
    state = {}
    for prefix, scale in (('backbone.', 0.0), ('teacher.backbone.', 1.0)):
        for k, v in backbone.state_dict().items():
            state[prefix + k] = v + scale * (v.is_floating_point())
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), path)
    return {
        k[len('teacher.backbone.') :]: v
        for k, v in state.items()
        if k.startswith('teacher.')
    }


def test_swinunetr_export_loads_strict_and_matches(tmp_path):
    torch.manual_seed(0)
    ours = SwinViT3D(**SWIN, out_indices=(0, 1, 2, 3, 4)).eval()
    teacher = _algorithm_checkpoint(ours, tmp_path / 'epoch_1.pth')
    tool = load_tool('model_converters/mmssl_to_monai_swinunetr.py')
    tool.main([str(tmp_path / 'epoch_1.pth'), str(tmp_path / 'out.pt')])
    out = torch.load(tmp_path / 'out.pt')
    net = SwinUNETR(in_channels=1, out_channels=2, **SWIN).eval()
    net.swinViT.load_state_dict(out, strict=True)
    ours.load_state_dict(teacher)  # the teacher was exported
    x = torch.randn(1, 1, 32, 32, 32)
    with torch.no_grad():
        expected = ours(x)
        got = net.swinViT(x, normalize=True)
    assert len(got) == 5
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e)


def test_swinunetr_export_rejects_a_vit(tmp_path):
    vit = VisionTransformer3D(**VIT, patch_size=8)
    torch.save(dict(state_dict=vit.state_dict()), tmp_path / 'vit.pth')
    tool = load_tool('model_converters/mmssl_to_monai_swinunetr.py')
    with pytest.raises(ValueError, match='swinViT'):
        tool.main([str(tmp_path / 'vit.pth'), str(tmp_path / 'o.pt')])


def _monai_vit(**kw):
    return ViT(
        in_channels=1,
        img_size=16,
        patch_size=8,
        hidden_size=32,
        mlp_dim=128,
        num_layers=2,
        num_heads=4,
        qkv_bias=True,
        classification=False,
        **kw,
    ).eval()


def _ours_without_cls(model, x):
    """Our blocks run on the patch tokens only, as MONAI's ViT does."""
    tokens, _ = model.patch_embed(x)  # (B, N, C)
    tokens = tokens + model.pos_embed[:, 1:]
    for layer in model.layers:
        tokens = layer(tokens)
    return model.ln1(tokens)


def test_vit_export_loads_strict_and_matches(tmp_path):
    torch.manual_seed(0)
    ours = VisionTransformer3D(
        **VIT,
        patch_size=8,
        layer_scale_init_value=0.5,
        norm_cfg=dict(type='LN', eps=1e-5),  # MONAI's LayerNorm eps
    ).eval()
    with torch.no_grad():  # non-trivial LayerScale, norms, pos-embed
        for name, p in ours.named_parameters():
            if 'gamma' in name or 'ln' in name or 'pos_embed' in name:
                p.add_(torch.randn_like(p) * 0.3)
    torch.save(
        dict(
            state_dict={
                'backbone.' + k: v for k, v in ours.state_dict().items()
            }
        ),
        tmp_path / 'ckpt.pth',
    )
    tool = load_tool('model_converters/mmssl_to_monai_vit.py')
    tool.main([str(tmp_path / 'ckpt.pth'), str(tmp_path / 'vit.pt')])
    net = _monai_vit()
    net.load_state_dict(torch.load(tmp_path / 'vit.pt'), strict=True)
    x = torch.randn(2, 1, 16, 16, 16)
    with torch.no_grad():
        got, _ = net(x)
        expected = _ours_without_cls(ours, x)
    assert got.shape == (2, 8, 32)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_vit_export_refuses_registers(tmp_path):
    ours = VisionTransformer3D(**VIT, patch_size=8, num_register_tokens=2)
    torch.save(ours.state_dict(), tmp_path / 'ckpt.pth')
    tool = load_tool('model_converters/mmssl_to_monai_vit.py')
    with pytest.raises(ValueError, match='register tokens'):
        tool.main([str(tmp_path / 'ckpt.pth'), str(tmp_path / 'vit.pt')])


def test_swinunetr_pretrain_checkpoint_exports_the_encoder(tmp_path):
    """A SwinUNETRPretrain checkpoint (backbone., neck., rot_head.,
    decoder. keys) exports its encoder only, strict in MONAI's class."""
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='SwinUNETRPretrain',
            backbone=dict(type='SwinViT3D', **SWIN, window_size=4),
            neck=dict(
                type='NonLinearNeck',
                in_channels=192,
                hid_channels=16,
                out_channels=8,
                with_avg_pool=False,
            ),
        )
    ).eval()
    with torch.no_grad():  # weights unlike a fresh init
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    state = model.state_dict()
    assert {k.split('.')[0] for k in state} == {
        'backbone',
        'neck',
        'rot_head',
        'decoder',
    }
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), tmp_path / 'e.pth')
    tool = load_tool('model_converters/mmssl_to_monai_swinunetr.py')
    tool.main([str(tmp_path / 'e.pth'), str(tmp_path / 'out.pt')])
    net = SwinUNETR(in_channels=1, out_channels=2, window_size=4, **SWIN)
    net.swinViT.load_state_dict(torch.load(tmp_path / 'out.pt'), strict=True)
    x = torch.randn(1, 1, 32, 32, 32)
    with torch.no_grad():
        expected = model.backbone(x)[-1]
        got = net.eval().swinViT(x, normalize=True)[4]
    torch.testing.assert_close(got, expected)
