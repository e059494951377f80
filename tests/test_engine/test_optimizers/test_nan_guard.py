"""NaN guard: skip non-finite steps, stop after too many in a row."""

import pytest
import torch
from mmengine.optim import build_optim_wrapper

from mmssl.engine.optimizers import NaNGuardOptimWrapper


def _wrapper(model, **kw):
    return NaNGuardOptimWrapper(
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), **kw
    )


def test_nan_loss_skips_step_and_stops():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    wrapper = _wrapper(model, max_consecutive_skips=3)
    x = torch.randn(4, 3)
    w0 = model.weight.detach().clone()
    # inject a NaN
    wrapper.update_params(model(x).sum() * float('nan'))
    assert wrapper.last_step_skipped
    assert (wrapper.consecutive_skips, wrapper.total_skips) == (1, 1)
    assert torch.equal(model.weight, w0)
    assert model.weight.grad is None or not model.weight.grad.any()
    # a finite loss updates and resets the consecutive count
    wrapper.update_params(model(x).sum())
    assert not wrapper.last_step_skipped
    assert wrapper.consecutive_skips == 0 and wrapper.total_skips == 1
    assert not torch.equal(model.weight, w0)
    w1 = model.weight.detach().clone()
    wrapper.update_params(model(x).sum() * float('inf'))
    wrapper.update_params(model(x).sum() * float('nan'))
    with pytest.raises(RuntimeError, match='max_consecutive_skips=3'):
        wrapper.update_params(model(x).sum() * float('nan'))
    assert wrapper.total_skips == 4
    assert torch.equal(model.weight, w1)


def test_build_from_config_with_layer_decay_and_lr_mult():
    from mmssl.registry import MODELS

    model = MODELS.build(
        dict(
            type='DINO',
            backbone=dict(
                type='DINOVisionTransformer',
                arch=dict(embed_dims=16, num_layers=2, num_heads=2),
                img_size=16,
                patch_size=8,
            ),
            head=dict(
                type='DINOHead',
                in_channels=16,
                n_prototypes=8,
                hidden_channels=16,
                bottleneck_channels=4,
            ),
            loss=dict(type='DINOLoss', out_dim=8),
        )
    )
    wrapper = build_optim_wrapper(
        model,
        dict(
            type='NaNGuardOptimWrapper',
            max_consecutive_skips=5,
            optimizer=dict(type='AdamW', lr=1.0, weight_decay=0.04),
            clip_grad=dict(max_norm=3.0),
            constructor='LayerDecayOptimWrapperConstructor',
            paramwise_cfg=dict(
                layer_decay_rate=0.5,
                flat_decay_mult=0.0,
                custom_keys={'patch_embed': dict(lr_mult=0.2)},
            ),
        ),
    )
    assert isinstance(wrapper, NaNGuardOptimWrapper)
    assert wrapper.max_consecutive_skips == 5
    # mmengine adds a parameterless 'base' group for logging base_lr
    groups = [g for g in wrapper.param_groups if 'param_name' in g]
    lrs = {g['param_name']: g['lr'] for g in groups}
    wds = {g['param_name']: g['weight_decay'] for g in groups}
    # depth 0 of 4 depths: 0.5 ** 3; patch embed additionally x0.2
    assert lrs['backbone.patch_embed.projection.weight'] == pytest.approx(
        0.125 * 0.2
    )
    assert lrs['backbone.cls_token'] == pytest.approx(0.125)
    assert lrs['backbone.layers.1.attn.qkv.weight'] == pytest.approx(0.5)
    assert lrs['head.mlp.0.weight'] == pytest.approx(1.0)
    assert wds['head.mlp.0.bias'] == 0.0
    assert wds['head.mlp.0.weight'] == pytest.approx(0.04)
    assert not any(n.startswith('teacher.') for n in lrs)
