"""LayerDecayOptimWrapperConstructor: layer decay x lr_mult (DINOv2)."""

import copy

import pytest
from torch import nn

from mmssl.models.backbones import DINOVisionTransformer
from mmssl.registry import OPTIM_WRAPPER_CONSTRUCTORS


class StudentTeacher(nn.Module):
    """A model without get_layer_depth: student backbone + head + frozen
    teacher, as in DINO-style algorithms."""

    def __init__(self):
        super().__init__()
        self.backbone = DINOVisionTransformer(
            arch=dict(embed_dims=16, num_layers=3, num_heads=2), img_size=28
        )
        self.head = nn.Linear(16, 4)
        self.teacher = copy.deepcopy(self.backbone)
        self.teacher.requires_grad_(False)


def build(paramwise_cfg, **optimizer):
    return OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type='LayerDecayOptimWrapperConstructor',
            optim_wrapper_cfg=dict(
                type='OptimWrapper',
                optimizer=dict(
                    type='AdamW', lr=1.0, weight_decay=0.04, **optimizer
                ),
            ),
            paramwise_cfg=paramwise_cfg,
        )
    )


@pytest.mark.parametrize('fuse', [False, True])
def test_layer_decay_times_patch_embed_lr_mult(fuse):
    ctor = build(
        dict(
            fuse_param_groups=fuse,
            layer_decay_rate=0.5,
            norm_decay_mult=0.0,
            bias_decay_mult=0.0,
            flat_decay_mult=0.0,
            custom_keys={'patch_embed': dict(lr_mult=0.2)},
        )
    )
    model = StudentTeacher()
    groups = ctor(model).optimizer.param_groups
    by_name = {
        name: g
        for g in groups
        for name in g.get('param_names', [g.get('param_name')])
    }
    assert not any(n.startswith('teacher') for n in by_name)  # frozen
    n_trainable = sum(1 for p in model.parameters() if p.requires_grad)
    assert len(by_name) == n_trainable
    # one group per parameter, or one per (lr, weight decay): embeddings
    # (decay, no decay, patch-embed x0.2 with and without decay), 3 blocks
    # x (decay, no decay), top (decay, no decay)
    assert len(groups) == (11 if fuse else n_trainable)
    # depth: embeddings 0, block i -> i + 1, final norm / head 4 (of 5)
    assert by_name['backbone.pos_embed']['lr'] == pytest.approx(0.5**4)
    assert by_name['backbone.patch_embed.projection.weight'][
        'lr'
    ] == pytest.approx(0.2 * 0.5**4)
    assert by_name['backbone.patch_embed.projection.bias'][
        'lr'
    ] == pytest.approx(0.2 * 0.5**4)
    assert by_name['backbone.layers.0.attn.qkv.weight']['lr'] == pytest.approx(
        0.5**3
    )
    assert by_name['backbone.layers.2.ffn.layers.1.weight'][
        'lr'
    ] == pytest.approx(0.5)
    assert by_name['backbone.ln1.weight']['lr'] == pytest.approx(1.0)
    assert by_name['head.weight']['lr'] == pytest.approx(1.0)
    # DINOv2 weight decay: none on biases, norms and LayerScale gammas
    assert by_name['backbone.layers.0.attn.qkv.weight'][
        'weight_decay'
    ] == pytest.approx(0.04)
    assert by_name['backbone.layers.0.attn.qkv.bias']['weight_decay'] == 0
    assert by_name['backbone.layers.0.attn.gamma1.weight']['weight_decay'] == 0
    assert by_name['backbone.ln1.weight']['weight_decay'] == 0
    assert all('lr_mult' not in g for g in groups)


def test_no_layer_depth_anywhere_raises():
    ctor = build(dict(layer_decay_rate=0.5))
    with pytest.raises(NotImplementedError, match='get_layer_depth'):
        ctor(nn.Sequential(nn.Linear(2, 2)))


def test_dinov2_decay_rule():
    """dinov2's get_params_groups_with_decay: no decay on biases (the
    patch embedding's too), norms and LayerScale; decay on the tokens,
    the 1-D mask token included; the last layer in groups of its own."""
    ctor = build(
        dict(
            layer_decay_rate=0.5,
            decay_rule='dinov2',
            custom_keys={'patch_embed': dict(lr_mult=0.2)},
        )
    )
    model = StudentTeacher()
    model.head = nn.Module()
    model.head.mlp = nn.Linear(16, 4)
    model.head.last_layer = nn.Linear(4, 8, bias=False)
    groups = ctor(model).optimizer.param_groups
    by_name = {name: g for g in groups for name in g['param_names']}
    wd = {name: g['weight_decay'] for name, g in by_name.items()}
    assert model.backbone.mask_token.ndim == 1
    for name in ('mask_token', 'cls_token', 'pos_embed'):
        assert wd[f'backbone.{name}'] == pytest.approx(0.04), name
    assert wd['backbone.patch_embed.projection.weight'] == pytest.approx(0.04)
    assert wd['backbone.patch_embed.projection.bias'] == 0
    assert wd['backbone.layers.0.ln1.weight'] == 0
    assert wd['backbone.layers.0.attn.gamma1.weight'] == 0
    assert wd['backbone.layers.0.attn.qkv.bias'] == 0
    assert wd['head.mlp.weight'] == pytest.approx(0.04)
    # the patch embedding keeps its lr multiplier on top of the decay
    assert by_name['backbone.patch_embed.projection.bias'][
        'lr'
    ] == pytest.approx(0.2 * 0.5**4)
    last = by_name['head.last_layer.weight']
    assert last['is_last_layer'] and last['param_names'] == [
        'head.last_layer.weight'
    ]
    assert not by_name['head.mlp.weight']['is_last_layer']
    with pytest.raises(ValueError, match='decay_rule'):
        build(dict(decay_rule='dinov3'))(StudentTeacher())
