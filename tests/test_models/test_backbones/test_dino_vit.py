"""Tests of DINOVisionTransformer (registers, mask token, interpolation,
activation checkpointing, attention maps, layer depth, presets)."""

import copy

import pytest
import torch
import torch.nn.functional as F

from mmssl.models.backbones import DINOVisionTransformer, count_dino_vit_params
from mmssl.models.utils.activation_checkpoint import selective_cp_available
from mmssl.registry import MODELS
from tests.support.dist import file_init_method, init_gloo, spawn

TINY = dict(embed_dims=32, num_layers=2, num_heads=4)


def tiny(**kwargs):
    cfg = dict(arch=TINY, img_size=56, patch_size=14, num_register_tokens=2)
    cfg.update(kwargs)
    model = DINOVisionTransformer(**cfg)
    model.init_weights()
    # random LayerScale/mask token so every path contributes visibly
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'gamma' in name:
                p.uniform_(0.5, 1.0)
        model.mask_token.normal_()
        if model.register_tokens is not None:
            model.register_tokens.normal_()
    return model


def test_build_from_registry_and_attributes():
    model = MODELS.build(
        dict(
            type='DINOVisionTransformer',
            arch='s',
            img_size=224,
            patch_size=16,
            num_register_tokens=4,
        )
    )
    assert model.embed_dims == 384
    assert model.num_register_tokens == 4
    assert model.num_extra_tokens == 5
    assert model.patch_size == 16
    assert model.mask_token.shape == (384,)
    assert model.register_tokens.shape == (1, 4, 384)
    assert model.pos_embed.shape == (1, 1 + 14 * 14, 384)
    assert model.out_type == 'cls_token'
    assert model.layers[0].attn.gamma1.weight.allclose(
        torch.full((384,), 1e-5)
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match='Unknown arch'):
        DINOVisionTransformer(arch='huge-ish')
    with pytest.raises(ValueError, match='custom arch'):
        DINOVisionTransformer(arch=dict(embed_dims=8))
    with pytest.raises(ValueError, match='num_register_tokens'):
        DINOVisionTransformer(arch=TINY, num_register_tokens=-1)
    with pytest.raises(ValueError, match='out_type'):
        DINOVisionTransformer(arch=TINY, out_type='tokens')
    model = tiny()
    with pytest.raises(ValueError, match=r'expected \(2, 4, 4\)'):
        model(torch.randn(2, 3, 56, 56), mask=torch.zeros(2, 5, 5).bool())


@pytest.mark.parametrize('regs', [0, 3])
def test_output_types(regs):
    x = torch.randn(2, 3, 56, 42)  # 4 x 3 patches
    raw = tiny(num_register_tokens=regs, out_type='raw').eval()
    (tokens,) = raw(x)
    assert tokens.shape == (2, 1 + regs + 12, 32)
    for out_type, shape in [
        ('cls_token', (2, 32)),
        ('featmap', (2, 32, 4, 3)),
        ('avg_featmap', (2, 32)),
    ]:
        model = copy.deepcopy(raw)
        model.out_type = out_type
        (out,) = model(x)
        assert out.shape == shape
        if out_type == 'cls_token':
            torch.testing.assert_close(out, tokens[:, 0])
        elif out_type == 'featmap':
            torch.testing.assert_close(
                out.flatten(2).transpose(1, 2), tokens[:, 1 + regs :]
            )
        else:
            torch.testing.assert_close(out, tokens[:, 1 + regs :].mean(1))
    # built with 'avg_featmap': no extra LayerNorm, same keys as 'raw'
    avg = tiny(num_register_tokens=regs, out_type='avg_featmap')
    assert set(avg.state_dict()) == set(raw.state_dict())


def test_out_indices_are_final_normed():
    model = tiny(out_type='raw', out_indices=[0, 1]).eval()
    x = torch.randn(2, 3, 56, 56)
    outs = model(x)
    assert len(outs) == 2
    tokens, _ = model.prepare_tokens(x)
    first = model.layers[0](tokens)
    torch.testing.assert_close(outs[0], model.ln1(first))
    torch.testing.assert_close(outs[1], model.ln1(model.layers[1](first)))


def test_register_tokens_inserted_after_pos_embed():
    model = tiny(num_register_tokens=2).eval()
    x = torch.randn(1, 3, 56, 56)
    tokens, grid = model.prepare_tokens(x)
    assert grid == (4, 4)
    patches, _ = model.patch_embed(x)
    torch.testing.assert_close(
        tokens[:, 0], model.cls_token[:, 0] + model.pos_embed[:, 0]
    )
    torch.testing.assert_close(tokens[:, 1:3], model.register_tokens)
    torch.testing.assert_close(tokens[:, 3:], patches + model.pos_embed[:, 1:])


def test_mask_token():
    model = tiny(out_type='raw').eval()
    x = torch.randn(2, 3, 56, 56)
    mask = torch.zeros(2, 4, 4, dtype=torch.bool)
    mask[0, 1, 2] = mask[0, 3, 0] = mask[1, 0, 0] = True
    tokens, _ = model.prepare_tokens(x, mask)
    plain, _ = model.prepare_tokens(x)
    flat = mask.flatten(1)
    pos = model.pos_embed[0, 1:]
    patch_tokens = tokens[:, 3:]
    # masked positions: mask_token + pos-embed; others unchanged
    for b in range(2):
        torch.testing.assert_close(
            patch_tokens[b][flat[b]], (model.mask_token + pos)[flat[b]]
        )
    torch.testing.assert_close(patch_tokens[~flat], plain[:, 3:][~flat])
    torch.testing.assert_close(tokens[:, :3], plain[:, :3])
    # (B, N) layout gives the same result; an all-False mask changes nothing
    torch.testing.assert_close(model(x, flat)[0], model(x, mask)[0])
    torch.testing.assert_close(
        model(x, torch.zeros_like(mask))[0], model(x)[0]
    )
    # content under masked patches no longer matters
    x2 = x.clone()
    x2[0, :, 14:28, 28:42] = torch.randn(3, 14, 14)  # patch (1, 2)
    torch.testing.assert_close(model(x2, mask)[0], model(x, mask)[0])
    assert not torch.allclose(model(x2)[0], model(x)[0])


def test_mask_token_gets_gradient_only_when_used():
    model = tiny(out_type='raw').train()
    x = torch.randn(2, 3, 56, 56)
    model(x)[0].sum().backward()
    assert model.mask_token.grad is not None  # in the graph (DDP-safe)
    assert model.mask_token.grad.abs().sum() == 0
    model.zero_grad()
    mask = torch.rand(2, 16) > 0.5
    model(x, mask)[0].sum().backward()
    assert model.mask_token.grad.abs().sum() > 0


@pytest.mark.parametrize(
    'patch,size,grid',
    [
        (16, (96, 96), (6, 6)),
        (16, (224, 224), (14, 14)),
        (14, (98, 70), (7, 5)),
        (14, (224, 224), (16, 16)),
    ],
)
def test_pos_embed_interpolation(patch, size, grid):
    model = tiny(patch_size=patch, img_size=4 * patch, out_type='featmap')
    model.eval()
    out = model(torch.randn(1, 3, *size))[0]
    assert out.shape == (1, 32, *grid)
    pos = model.interpolate_pos_encoding(grid)
    src = model.pos_embed[:, 1:].reshape(1, 4, 4, 32).permute(0, 3, 1, 2)
    # DINOv2: bicubic with scale factor (grid + 0.1) / 4
    expect = F.interpolate(
        src,
        scale_factor=((grid[0] + 0.1) / 4, (grid[1] + 0.1) / 4),
        mode='bicubic',
    )
    torch.testing.assert_close(pos[:, 1:], expect.flatten(2).transpose(1, 2))
    torch.testing.assert_close(pos[:, 0], model.pos_embed[:, 0])


def test_pos_embed_native_grid_and_cache():
    model = tiny().eval()
    assert model.interpolate_pos_encoding((4, 4)) is model.pos_embed
    with torch.no_grad():
        a = model.interpolate_pos_encoding((7, 7))
        assert model.interpolate_pos_encoding((7, 7)) is a  # cached
        model.pos_embed.mul_(2.0)  # in-place update (e.g. EMA teacher)
        b = model.interpolate_pos_encoding((7, 7))
    assert b is not a
    torch.testing.assert_close(b, 2 * a)
    # with grad: never cached, gradient flows to pos_embed
    model.train()
    pos = model.interpolate_pos_encoding((7, 7))
    pos.sum().backward()
    assert model.pos_embed.grad.abs().sum() > 0


def test_with_cp_same_outputs_and_grads():
    torch.manual_seed(0)
    ref = tiny(out_type='raw', drop_path_rate=0.0)
    cp_model = copy.deepcopy(ref)
    cp_model.with_cp = True
    ref.train()
    cp_model.train()
    x = torch.randn(2, 3, 56, 42)
    mask = torch.rand(2, 12) > 0.5
    for model in (ref, cp_model):
        out = model(x, mask)[0]
        (out.pow(2).mean() + model(x)[0].mean()).backward()  # two crops
    torch.testing.assert_close(cp_model(x)[0], ref(x)[0])
    for (name, p1), (_, p2) in zip(
        ref.named_parameters(), cp_model.named_parameters()
    ):
        torch.testing.assert_close(p1.grad, p2.grad, msg=name)


def test_last_selfattention():
    model = tiny(num_register_tokens=1).eval()
    x = torch.randn(2, 3, 56, 56)
    attn = model.get_last_selfattention(x)
    assert attn.shape == (2, 4, 1 + 1 + 16, 1 + 1 + 16)
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 4, 18))
    # zero query/key weights -> uniform attention
    with torch.no_grad():
        model.layers[-1].attn.qkv.weight[:64].zero_()
        model.layers[-1].attn.qkv.bias[:64].zero_()
    attn = model.get_last_selfattention(x)
    torch.testing.assert_close(attn, torch.full_like(attn, 1 / 18))


def test_drop_path_and_giant_swiglu_tiny():
    arch = dict(TINY, ffn_type='swiglu_fused')
    model = tiny(arch=arch, drop_path_rate=0.2, out_type='raw')
    ffn = model.layers[1].ffn
    assert ffn.w12.out_features == 2 * ((int(128 * 2 / 3) + 7) // 8 * 8)
    # the block applies stochastic depth to both branches (DINOBlock)
    assert model.layers[1].drop_path_rate == pytest.approx(0.2)
    assert model.layers[0].drop_path_rate == 0.0
    model.eval()
    x = torch.randn(2, 3, 56, 56)
    torch.testing.assert_close(model(x)[0], model(x)[0])  # no drop in eval


@pytest.mark.parametrize('ffn_type', ['origin', 'swiglu_fused'])
def test_drop_path_per_sample_in_training_only(ffn_type):
    """Stochastic depth rises linearly to drop_path_rate: block 0 has 0,
    block 1 has p = 0.6. In training with autograd on, each sample's
    attention and FFN branches of block 1 are, independently, dropped or
    kept and scaled by 1 / (1 - p); in evaluation, or without autograd
    (the EMA teacher), both are kept unscaled."""
    keep = 1 - 0.6
    model = tiny(
        arch=dict(TINY, ffn_type=ffn_type), drop_path_rate=0.6, out_type='raw'
    )
    block = model.layers[1]
    torch.manual_seed(0)
    x = torch.randn(16, 3, 56, 56)

    def ffn_branch(y):
        return block.ffn(block.ln2(y), identity=torch.zeros_like(y))

    model.eval()
    with torch.no_grad():
        h = model.layers[0](model.prepare_tokens(x)[0])
        attn = block.attn(block.ln1(h))
        y = h + attn
        no_drop = model.ln1(y + ffn_branch(y))
        eval_out = model(x)[0]
        torch.testing.assert_close(eval_out, no_drop)
        torch.testing.assert_close(model(x)[0], eval_out)
        # training: one of four outcomes per sample (branches from eval)
        options = {}
        for ka in (0, 1):
            ya = h + ka / keep * attn
            for kf in (0, 1):
                options[ka, kf] = ya + kf / keep * ffn_branch(ya)
        model.train()
        # no autograd: the teacher's case, every branch runs unscaled
        torch.testing.assert_close(model(x)[0], eval_out)
        with torch.enable_grad():  # stochastic depth needs autograd on
            train_block = block(h).detach()
        seen = []
        for b in range(len(x)):
            match = [
                k
                for k, v in options.items()
                if torch.allclose(train_block[b], v[b], atol=1e-5)
            ]
            assert len(match) == 1, (b, match)
            seen += match
        assert {ka for ka, _ in seen} == {0, 1}  # both drawn for attention
        assert {kf for _, kf in seen} == {0, 1}  # and for the FFN
        with torch.enable_grad():
            train_out = model(x)[0].detach()
    assert not torch.allclose(train_out, eval_out, atol=1e-3)


def test_frozen_stages():
    model = tiny(frozen_stages=1)
    for name in ('cls_token', 'pos_embed', 'mask_token', 'register_tokens'):
        assert not getattr(model, name).requires_grad
    assert not any(p.requires_grad for p in model.layers[0].parameters())
    assert all(p.requires_grad for p in model.layers[1].parameters())
    assert model.train() is model and not model.layers[0].training


@pytest.mark.parametrize(
    'arch,published',
    [
        ('small', 22.06e6),
        ('base', 86.58e6),
        ('large', 304.37e6),
        ('giant', 1136.48e6),
    ],
)
def test_preset_param_counts(arch, published):
    n = count_dino_vit_params(arch, img_size=518, patch_size=14)
    assert abs(n - published) / published < 0.02
    if arch != 'giant':
        with torch.device('meta'):
            model = DINOVisionTransformer(arch=arch, img_size=518)
        assert sum(p.numel() for p in model.parameters()) == n
    regs = count_dino_vit_params(arch, num_register_tokens=4)
    assert (
        regs - count_dino_vit_params(arch)
        == 4 * {'small': 384, 'base': 768, 'large': 1024, 'giant': 1536}[arch]
    )


def test_layer_depth_and_layer_decay_constructor():
    from mmpretrain.engine.optimizers import (
        LearningRateDecayOptimWrapperConstructor,
    )

    model = tiny()
    assert model.get_layer_depth('backbone.mask_token', 'backbone.') == (0, 4)
    assert model.get_layer_depth('backbone.register_tokens', 'backbone.') == (
        0,
        4,
    )
    assert model.get_layer_depth(
        'backbone.layers.1.ln1.weight', 'backbone.'
    ) == (2, 4)
    assert model.get_layer_depth('backbone.ln1.weight', 'backbone.') == (3, 4)
    assert model.get_layer_depth('head.w', 'backbone.') == (3, 4)

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = model
            self.head = torch.nn.Linear(32, 2)

        def get_layer_depth(self, name):
            return self.backbone.get_layer_depth(name, 'backbone.')

    ctor = LearningRateDecayOptimWrapperConstructor(
        dict(optimizer=dict(type='SGD', lr=1.0, weight_decay=0.05)),
        paramwise_cfg=dict(layer_decay_rate=0.5),
    )
    optim = ctor(Wrapper()).optimizer
    lrs = {g['param_name']: g['lr'] for g in optim.param_groups}
    # DINOv2 rule: lr * decay ** (num_layers + 1 - depth)
    assert lrs['backbone.patch_embed.projection.weight'] == 0.125
    assert lrs['backbone.mask_token'] == 0.125
    assert lrs['backbone.layers.0.attn.qkv.weight'] == 0.25
    assert lrs['backbone.layers.1.attn.qkv.weight'] == 0.5
    assert lrs['backbone.ln1.weight'] == 1.0
    assert lrs['head.weight'] == 1.0


def _ddp_worker(rank, world_size, init_method, result_file, with_cp=True):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    init_gloo(rank, world_size, init_method)
    torch.manual_seed(0)
    model = DINOVisionTransformer(
        arch=dict(embed_dims=16, num_layers=2, num_heads=2),
        img_size=28,
        patch_size=14,
        num_register_tokens=1,
        with_cp=with_cp,
        drop_path_rate=0.1,
    )
    ddp = DDP(model)
    optim = torch.optim.SGD(ddp.parameters(), lr=0.1)
    torch.manual_seed(rank)
    for step in range(2):
        global_crop = torch.randn(2, 3, 28, 28)
        local_crop = torch.randn(2, 3, 14, 14)
        # a step without any mask must not leave mask_token unused
        # (DDP runs with find_unused_parameters=False)
        mask = torch.rand(2, 4) > 0.5 if step == 0 else None
        loss = (
            ddp(global_crop, mask)[0].pow(2).mean()
            + ddp(local_crop)[0].pow(2).mean()
        )
        optim.zero_grad()
        loss.backward()
        optim.step()
    # parameters stay in sync across ranks
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        torch.save(
            dict(diff=(gathered[0] - gathered[1]).abs().max()), result_file
        )
    dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.parametrize('with_cp', [True, 'selective'])
def test_ddp_with_cp_two_forwards_per_step(tmp_path, with_cp):
    """Non-reentrant checkpointing (whole blocks, or selective by op) under
    DDP with a block run twice per step: backward must not raise 'Expected
    to mark a variable ready only once'."""
    if with_cp == 'selective' and not selective_cp_available():
        pytest.skip('torch lacks create_selective_checkpoint_contexts')
    result = tmp_path / 'ddp.pth'
    spawn(_ddp_worker, 2, file_init_method(tmp_path), str(result), with_cp)
    assert torch.load(result)['diff'] == 0


@pytest.mark.parametrize('backbone', ['DINOVisionTransformer', 'DINOv3ViT'])
def test_mask_of_the_wrong_grid_is_named(backbone):
    """Both backbones share the mask-token code: a mask for another patch
    grid stops with both shapes named, and a right one changes exactly
    the masked tokens."""
    model = MODELS.build(
        dict(type=backbone, arch=TINY, patch_size=14, out_type='raw')
    ).eval()
    x = torch.randn(2, 3, 56, 56)  # a 4x4 grid
    with pytest.raises(ValueError, match=r'mask of shape \(2, 3, 3\).*4x4'):
        model(x, mask=torch.zeros(2, 3, 3, dtype=torch.bool))
    with torch.no_grad():
        model.mask_token.normal_()
        mask = torch.zeros(2, 16, dtype=torch.bool)
        mask[0, 5] = True
        tokens, grid = model.prepare_tokens(x, mask)
        plain, _ = model.prepare_tokens(x)
    assert grid == (4, 4)
    changed = (tokens != plain).any(-1)  # (B, 1 + R + N)
    n = model.num_extra_tokens
    assert changed.nonzero().tolist() == [[0, n + 5]]
