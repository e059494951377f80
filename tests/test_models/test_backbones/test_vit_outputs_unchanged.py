"""The ViT backbones compute what they computed before they were rebuilt.

Seeded tiny DINOv2-style and DINOv3 ViTs, initialised by their own
``init_weights``, run in evaluation (with a mask), in training with
stochastic depth (the draws of a seeded global RNG), packed over two crop
sizes, and give their last attention map. ``tests/data/vit_outputs.pt``
holds those outputs, recorded from the backbones before they were moved
onto :mod:`mmssl.models.layers`; the same seed must give the same weights
and the same values. Rewrite it only on purpose:
``RECORD_OUTPUTS=1 pytest tests/test_models/test_backbones/``
``test_vit_outputs_unchanged.py``.
"""

import os
import os.path as osp

import pytest
import torch

from mmssl.registry import MODELS

FIXTURE = osp.join(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))),
    'data',
    'vit_outputs.pt',
)
TWO = dict(embed_dims=16, num_layers=2, num_heads=2)
COMMON = dict(patch_size=8, num_register_tokens=2, out_type='raw')

#: Backbones whose outputs are guarded, by name.
CASES = {
    'dinov2': dict(
        type='DINOVisionTransformer',
        arch=TWO,
        img_size=16,
        drop_path_rate=0.5,
        out_indices=[0, 1],
    ),
    'dinov2_swiglu_static': dict(
        type='DINOVisionTransformer',
        arch=dict(TWO, ffn_type='swiglu_fused'),
        img_size=16,
        drop_path_rate=0.5,
        drop_path_mode='static',
    ),
    'dinov3_mlp': dict(
        type='DINOv3ViT',
        arch=TWO,
        drop_path_rate=0.5,
        out_indices=[0, 1],
        untie_cls_and_patch_norms=True,
    ),
    'dinov3_swiglu_fixed': dict(
        type='DINOv3ViT',
        arch=dict(TWO, ffn_type='swiglu', qkv_bias=False),
        drop_path_rate=0.5,
        drop_path_mode='fixed_stochastic',
    ),
    'dinov3_mlp_nomask_ls0': dict(
        type='DINOv3ViT',
        arch=TWO,
        drop_path_rate=0.5,
        drop_path_mode='fixed',
        mask_k_bias=False,
        layer_scale_init_value=0.0,
    ),
}


def _outputs(cfg: dict) -> dict:
    torch.manual_seed(0)
    model = MODELS.build(dict(COMMON, **cfg))
    model.init_weights()
    with torch.no_grad():  # visible LayerScale, bias and mask token
        for name, p in model.named_parameters():
            if 'gamma' in name or name.endswith('bias'):
                p.normal_(0.0, 0.5)
        model.mask_token.normal_()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 3, 16, 24, generator=gen)
    small = torch.randn(2, 3, 16, 8, generator=gen)
    mask = torch.rand(3, 6, generator=gen) < 0.5
    out = {}
    model.eval()
    with torch.no_grad():
        out['eval'] = torch.cat(model(x, mask=mask), 1)
        out['attn'] = model.get_last_selfattention(x)
    model.train()
    torch.manual_seed(2)
    out['train'] = torch.cat(model(x), 1).detach()
    torch.manual_seed(3)
    packed = model.forward_packed([x, small], [mask, None])
    out['packed'] = torch.cat([o.flatten() for g in packed for o in g])
    out['packed'] = out['packed'].detach()
    return out


def test_outputs_unchanged():
    got = {name: _outputs(cfg) for name, cfg in CASES.items()}
    if os.environ.get('RECORD_OUTPUTS'):
        torch.save(got, FIXTURE)
        pytest.skip('recorded')
    want = torch.load(FIXTURE, weights_only=True)
    assert set(got) == set(want)
    for name in CASES:
        assert got[name].keys() == want[name].keys(), name
        for key, value in want[name].items():
            torch.testing.assert_close(
                got[name][key], value, atol=1e-5, rtol=1e-5, msg=name + key
            )
