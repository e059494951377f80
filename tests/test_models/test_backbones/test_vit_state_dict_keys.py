"""The ViT backbones keep their state-dict keys and shapes.

Checkpoints (and the converters of :mod:`mmssl.checkpoint.layouts`) name
every parameter and buffer; a rebuilt backbone must produce the same
names with the same shapes. ``tests/data/state_dict_keys/vit_keys.json``
holds them in order (optimizer states follow the parameter order),
recorded from the backbone before it was rebuilt over
:mod:`mmssl.models.layers`. Rewrite it only on purpose:
``RECORD_KEYS=1 pytest tests/test_models/test_backbones/``
``test_vit_state_dict_keys.py``.
"""

import json
import os
import os.path as osp

import pytest
import torch

from mmssl.registry import MODELS

FIXTURE = osp.join(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))),
    'data',
    'state_dict_keys',
    'vit_keys.json',
)
TWO = dict(embed_dims=32, num_layers=2, num_heads=4)

#: Backbones whose keys are guarded, by name.
CASES = {
    'dino_vit_tiny': dict(type='DINOVisionTransformer', arch='tiny'),
    'dino_vit_small_reg4': dict(
        type='DINOVisionTransformer',
        arch='small',
        patch_size=14,
        img_size=518,
        num_register_tokens=4,
    ),
    'dino_vit_swiglu_ls0': dict(
        type='DINOVisionTransformer',
        arch=dict(TWO, ffn_type='swiglu_fused'),
        img_size=56,
        layer_scale_init_value=0.0,
    ),
    'dino_vit_nobias_raw': dict(
        type='DINOVisionTransformer',
        arch=TWO,
        img_size=56,
        qkv_bias=False,
        out_type='raw',
        out_indices=[0, 1],
        drop_path_rate=0.1,
    ),
    'vit3d': dict(
        type='VisionTransformer3D',
        arch=TWO,
        img_size=32,
        patch_size=16,
    ),
    'dinov3_vit': dict(
        type='DINOv3ViT',
        arch=dict(TWO, ffn_type='swiglu'),
        patch_size=16,
        num_register_tokens=2,
    ),
    'dinov3_vit_mlp_untied': dict(
        type='DINOv3ViT',
        arch=dict(TWO, qkv_bias=False),
        patch_size=16,
        untie_cls_and_patch_norms=True,
        untie_global_and_local_cls_norm=True,
        drop_path_rate=0.1,
    ),
    'dinov3_vit_nomask_ls0': dict(
        type='DINOv3ViT',
        arch=TWO,
        patch_size=16,
        num_register_tokens=0,
        mask_k_bias=False,
        layer_scale_init_value=0.0,
    ),
}


def _keys(cfg: dict) -> list:
    torch.manual_seed(0)
    model = MODELS.build(dict(cfg))
    return [[k, list(v.shape)] for k, v in model.state_dict().items()]


def _dumps(keys: dict) -> str:
    """JSON with one [name, shape] per line."""
    cases = [
        f'  {json.dumps(name)}: [\n'
        + ',\n'.join(f'    {json.dumps(entry)}' for entry in keys[name])
        + '\n  ]'
        for name in sorted(keys)
    ]
    return '{\n' + ',\n'.join(cases) + '\n}\n'


def test_state_dict_keys_and_shapes_unchanged():
    got = {name: _keys(cfg) for name, cfg in CASES.items()}
    if os.environ.get('RECORD_KEYS'):
        os.makedirs(osp.dirname(FIXTURE), exist_ok=True)
        with open(FIXTURE, 'w') as f:
            f.write(_dumps(got))
        pytest.skip('recorded')
    with open(FIXTURE) as f:
        want = json.load(f)
    assert set(got) == set(want)
    for name in CASES:
        # Same names, shapes and order: the optimizer state of a
        # checkpoint is matched to the parameters by position.
        assert got[name] == want[name], name
