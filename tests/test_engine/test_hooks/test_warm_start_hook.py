"""WarmStartHook: head-only phase, last-K unfreezing, lr ramp, resume."""

import copy
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from mmssl.engine.hooks import WarmStartHook
from mmssl.models.backbones import DINOVisionTransformer


class Model(nn.Module):
    def __init__(self, **warm_start) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.backbone = DINOVisionTransformer(
            arch=dict(embed_dims=16, num_layers=2, num_heads=2),
            img_size=16,
            patch_size=8,
        )
        self.head = nn.Linear(16, 4)
        self.warm_start = dict(checkpoint='unused.pth', **warm_start)

    def loss(self, x):
        return (self.head(self.backbone(x)[-1]) - 10).pow(2).sum()


def make(hook, opt='sgd', **warm_start):
    model = Model(**warm_start)
    params = model.parameters()
    optimizer = (
        torch.optim.SGD(params, lr=0.1)
        if opt == 'sgd'
        else torch.optim.AdamW(params, lr=0.01, weight_decay=0.1)
    )
    runner = SimpleNamespace(
        model=model, optim_wrapper=SimpleNamespace(optimizer=optimizer), iter=0
    )
    hook.before_train(runner)
    return runner


def step(hook, runner, it):
    runner.iter = it
    hook.before_train_iter(runner, it)
    torch.manual_seed(100 + it)
    runner.model.loss(torch.randn(2, 3, 16, 16)).backward()
    runner.optim_wrapper.optimizer.step()
    runner.optim_wrapper.optimizer.zero_grad()


def snap(module):
    return {k: v.clone() for k, v in module.state_dict().items()}


def changed(before, module):
    now = module.state_dict()
    return {k for k in before if not torch.equal(before[k], now[k])}


@pytest.mark.parametrize('opt', ['sgd', 'adamw'])
def test_heads_alone_then_the_whole_backbone(opt):
    hook = WarmStartHook()
    runner = make(hook, opt, head_iters=3)
    backbone, head = runner.model.backbone, runner.model.head
    start = snap(backbone)
    for it in range(3):
        head_before = snap(head)
        step(hook, runner, it)
        assert changed(start, backbone) == set()  # bit-identical
        assert changed(head_before, head) == {'weight', 'bias'}
    step(hook, runner, 3)
    moved = changed(start, backbone)
    assert moved <= {n for n, _ in backbone.named_parameters()}
    assert {
        'cls_token',
        'pos_embed',
        'patch_embed.projection.weight',
        'layers.0.attn.qkv.weight',
        'layers.1.ffn.layers.1.weight',
        'ln1.weight',
    } <= moved


def test_unfreeze_last_k_blocks_and_the_final_norm():
    hook = WarmStartHook(head_iters=1, unfreeze=1)  # hook args win
    runner = make(hook, head_iters=5, unfreeze='all')
    backbone = runner.model.backbone
    start = snap(backbone)
    for it in range(3):
        step(hook, runner, it)
    moved = changed(start, backbone)
    assert all(n.startswith(('layers.1.', 'ln1.')) for n in moved)
    assert {'layers.1.attn.qkv.weight', 'ln1.weight', 'ln1.bias'} <= moved


def test_lr_ramp_scales_the_first_backbone_updates():
    ramp = WarmStartHook(head_iters=1, ramp_iters=4)
    plain = WarmStartHook(head_iters=1)
    runs = [make(ramp), make(plain)]
    for hook, runner in zip((ramp, plain), runs):
        step(hook, runner, 0)
    w0 = runs[0].model.backbone.ln1.weight.detach().clone()
    deltas = []
    for hook, runner in zip((ramp, plain), runs):
        step(hook, runner, 1)  # the first iteration with the backbone
        deltas.append(runner.model.backbone.ln1.weight.detach() - w0)
    assert deltas[1].abs().max() > 1e-3
    assert torch.allclose(deltas[0], 0.25 * deltas[1], atol=1e-6)
    assert ramp.phase(2)[2] == 0.5 and ramp.phase(4)[2] == 1.0
    assert ramp.phase(0) == (ramp._all, [], 1.0)


def train(hook_args, iters, resume_at=None, **warm_start):
    hook = WarmStartHook(**hook_args)
    runner = make(hook, 'adamw', **warm_start)
    for it in range(iters):
        if it == resume_at:  # save, then continue in a new process
            ckpt = {}
            hook.before_save_checkpoint(runner, ckpt)
            state = copy.deepcopy(
                (
                    runner.model.state_dict(),
                    runner.optim_wrapper.optimizer.state_dict(),
                )
            )
            hook = WarmStartHook()  # the config now says: no head phase
            runner = make(hook, 'adamw')
            hook.after_train(runner)
            hook.after_load_checkpoint(runner, ckpt)
            runner.model.load_state_dict(state[0])
            runner.optim_wrapper.optimizer.load_state_dict(state[1])
            runner.iter = it
            hook.before_train(runner)
        step(hook, runner, it)
    return runner.model, hook


def test_resume_restores_the_schedule_exactly():
    args = dict(head_iters=3, unfreeze=1, ramp_iters=2)
    full, _ = train(args, 7)
    resumed, hook = train(args, 7, resume_at=2)
    assert hook.settings == dict(args, start_iter=0)
    assert changed(snap(full), resumed) == set()
    # without the saved state, the new config would give other weights
    other, _ = train({}, 7)
    assert changed(snap(full), other)


def test_bad_unfreeze_is_refused():
    with pytest.raises(ValueError, match="unfreeze must be 'all'"):
        make(WarmStartHook(unfreeze=-1))
