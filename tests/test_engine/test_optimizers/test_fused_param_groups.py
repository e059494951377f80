"""Fused parameter groups and fused AdamW give the same steps as mmpretrain's
one-group-per-parameter layer decay."""

import copy

import pytest
import torch
from mmengine.optim import CosineAnnealingLR, LinearLR
from torch import nn

from mmssl.models.backbones import DINOVisionTransformer
from mmssl.registry import OPTIM_WRAPPER_CONSTRUCTORS

PARAMWISE = dict(
    layer_decay_rate=0.5,
    norm_decay_mult=0.0,
    bias_decay_mult=0.0,
    flat_decay_mult=0.0,
    custom_keys={'patch_embed': dict(lr_mult=0.2)},
)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.backbone = DINOVisionTransformer(
            arch=dict(embed_dims=16, num_layers=3, num_heads=2), img_size=28
        )
        self.head = nn.Linear(16, 4)


def build(model, fuse, **optimizer):
    ctor = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type='LayerDecayOptimWrapperConstructor',
            optim_wrapper_cfg=dict(
                type='OptimWrapper',
                optimizer=dict(
                    type='AdamW', lr=0.1, weight_decay=0.04, **optimizer
                ),
            ),
            paramwise_cfg=dict(PARAMWISE, fuse_param_groups=fuse),
        )
    )
    return ctor(model)


def step(model, wrapper, seed):
    gen = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen)
    wrapper.step()


@pytest.mark.parametrize('impl', [dict(foreach=False), dict(fused=True)])
def test_fused_groups_step_identically(impl):
    a = Model()
    b = copy.deepcopy(a)
    wa, wb = build(a, False, **impl), build(b, True, **impl)
    assert len(wb.optimizer.param_groups) < len(wa.optimizer.param_groups)
    for seed in range(3):
        step(a, wa, seed)
        step(b, wb, seed)
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(pa, pb), name
    # and the parameters did move
    assert not torch.equal(a.head.weight, Model().head.weight)


def test_fused_adamw_is_default_where_torch_has_it():
    assert build(Model(), True).optimizer.defaults['fused'] is True
    explicit = build(Model(), True, foreach=True).optimizer.defaults
    assert explicit['foreach'] is True and not explicit.get('fused')


def lrs_by_name(wrapper):
    return {
        n: g['lr']
        for g in wrapper.optimizer.param_groups
        for n in g.get('param_names', [g.get('param_name')])
    }


def test_schedulers_scale_each_fused_group():
    a, b = Model(), Model()
    wa, wb = build(a, False), build(b, True)
    scheds = [
        [
            LinearLR(w, start_factor=0.1, begin=0, end=3),
            CosineAnnealingLR(w, T_max=5, begin=3, end=8, eta_min=0.0),
        ]
        for w in (wa, wb)
    ]
    for _ in range(5):
        for group in scheds:
            for s in group:
                s.step()
    la, lb = lrs_by_name(wa), lrs_by_name(wb)
    assert la.keys() == lb.keys()
    for name in la:
        assert lb[name] == pytest.approx(la[name], rel=1e-12), name
    # cosine of step 2 of 5 times each group's own initial lr
    factor = (1 + torch.cos(torch.tensor(2 / 5 * torch.pi)).item()) / 2
    for g in wb.optimizer.param_groups:
        assert g['lr'] == pytest.approx(g['initial_lr'] * factor)


def test_fused_state_resumes_exactly():
    a = Model()
    wa = build(a, True)
    step(a, wa, 0)
    b = copy.deepcopy(a)
    wb = build(b, True)
    wb.load_state_dict(copy.deepcopy(wa.state_dict()))
    step(a, wa, 1)
    step(b, wb, 1)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
