"""Checkpoint conversion DINOv2 <-> mmssl <-> timm, checked numerically.

The DINOv2 side is an independent plain-torch re-implementation of the
DINOv2 ViT forward (``DinoVisionTransformer.forward_features`` of
facebookresearch/dinov2, written from the paper and the hub key layout)
running directly on a hub-layout state dict with random weights.
"""

import importlib.util
import math
import os.path as osp
import re

import pytest
import torch
import torch.nn.functional as F

from mmssl.checkpoint.layouts import (
    dinov2_to_mmssl,
    dinov2_to_timm,
    mmssl_to_dinov2,
    mmssl_to_timm,
)
from mmssl.models.backbones import DINOVisionTransformer

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EMBED, DEPTH, HEADS, PATCH, REGS, IMG = 64, 2, 4, 14, 2, 56


def _load_tool(name):
    path = osp.join(ROOT, 'tools', 'model_converters', f'{name}.py')
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_hub_state_dict(
    embed=EMBED,
    depth=DEPTH,
    regs=REGS,
    img=IMG,
    swiglu=False,
    chunks=0,
    seed=0,
):
    """Random DINOv2 hub-layout weights (norms and LayerScale random too)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.1):
        return torch.randn(*shape, generator=g) * scale

    grid = img // PATCH
    sd = {
        'cls_token': rnd(1, 1, embed, scale=1.0),
        'pos_embed': rnd(1, 1 + grid * grid, embed, scale=1.0),
        'mask_token': rnd(1, embed, scale=1.0),
        'patch_embed.proj.weight': rnd(embed, 3, PATCH, PATCH, scale=0.05),
        'patch_embed.proj.bias': rnd(embed),
        'norm.weight': 1 + rnd(embed),
        'norm.bias': rnd(embed),
    }
    if regs:
        sd['register_tokens'] = rnd(1, regs, embed, scale=1.0)
    hidden = 4 * embed
    swiglu_hidden = (int(hidden * 2 / 3) + 7) // 8 * 8
    for i in range(depth):
        b = (
            f'blocks.{i // (depth // chunks)}.{i}.'
            if chunks
            else f'blocks.{i}.'
        )
        sd.update(
            {
                b + 'norm1.weight': 1 + rnd(embed),
                b + 'norm1.bias': rnd(embed),
                b + 'attn.qkv.weight': rnd(3 * embed, embed),
                b + 'attn.qkv.bias': rnd(3 * embed),
                b + 'attn.proj.weight': rnd(embed, embed),
                b + 'attn.proj.bias': rnd(embed),
                b + 'ls1.gamma': 0.5 + rnd(embed),
                b + 'norm2.weight': 1 + rnd(embed),
                b + 'norm2.bias': rnd(embed),
                b + 'ls2.gamma': 0.5 + rnd(embed),
            }
        )
        if swiglu:
            sd.update(
                {
                    b + 'mlp.w12.weight': rnd(2 * swiglu_hidden, embed),
                    b + 'mlp.w12.bias': rnd(2 * swiglu_hidden),
                    b + 'mlp.w3.weight': rnd(embed, swiglu_hidden),
                    b + 'mlp.w3.bias': rnd(embed),
                }
            )
        else:
            sd.update(
                {
                    b + 'mlp.fc1.weight': rnd(hidden, embed),
                    b + 'mlp.fc1.bias': rnd(hidden),
                    b + 'mlp.fc2.weight': rnd(embed, hidden),
                    b + 'mlp.fc2.bias': rnd(embed),
                }
            )
    return sd


def ref_dinov2_forward(
    sd,
    x,
    num_heads=HEADS,
    patch=PATCH,
    masks=None,
    interpolate_offset=0.1,
    interpolate_antialias=False,
):
    """Reference DINOv2 ``forward_features`` on a hub-layout state dict.

    Returns (cls (B, C), registers (B, R, C), patches (B, N, C)), all after
    the final LayerNorm (eps 1e-6).
    """
    blocks = {}
    for k, v in sd.items():
        m = re.match(r'blocks\.(?:\d+\.)?(\d+)\.(.+)', k)
        if m:
            blocks.setdefault(int(m.group(1)), {})[m.group(2)] = v
    embed = sd['cls_token'].shape[-1]
    B, _, w, h = x.shape  # DINOv2 names dim 2 "w" and dim 3 "h"
    t = F.conv2d(
        x,
        sd['patch_embed.proj.weight'],
        sd['patch_embed.proj.bias'],
        stride=patch,
    )
    t = t.flatten(2).transpose(1, 2)
    if masks is not None:
        t = torch.where(masks.unsqueeze(-1), sd['mask_token'].unsqueeze(0), t)
    t = torch.cat((sd['cls_token'].expand(B, -1, -1), t), dim=1)
    # interpolate_pos_encoding
    pos = sd['pos_embed']
    npatch, N = t.shape[1] - 1, pos.shape[1] - 1
    if npatch == N and w == h:
        pos_i = pos
    else:
        M = int(math.sqrt(N))
        w0, h0 = w // patch, h // patch
        kwargs = {}
        if interpolate_offset:
            kwargs['scale_factor'] = (
                float(w0 + interpolate_offset) / M,
                float(h0 + interpolate_offset) / M,
            )
        else:
            kwargs['size'] = (w0, h0)
        pp = F.interpolate(
            pos[:, 1:].reshape(1, M, M, embed).permute(0, 3, 1, 2),
            mode='bicubic',
            antialias=interpolate_antialias,
            **kwargs,
        )
        assert (w0, h0) == pp.shape[-2:]
        pp = pp.permute(0, 2, 3, 1).view(1, -1, embed)
        pos_i = torch.cat((pos[:, :1], pp), dim=1)
    t = t + pos_i
    regs = sd.get('register_tokens')
    R = 0 if regs is None else regs.shape[1]
    if R:
        t = torch.cat((t[:, :1], regs.expand(B, -1, -1), t[:, 1:]), dim=1)
    T = t.shape[1]
    hd = embed // num_heads
    for i in sorted(blocks):
        p = blocks[i]
        y = F.layer_norm(t, (embed,), p['norm1.weight'], p['norm1.bias'], 1e-6)
        qkv = F.linear(y, p['attn.qkv.weight'], p['attn.qkv.bias'])
        q, k, v = qkv.reshape(B, T, 3, num_heads, hd).permute(2, 0, 3, 1, 4)
        a = ((q * hd**-0.5) @ k.transpose(-2, -1)).softmax(-1)
        o = (a @ v).transpose(1, 2).reshape(B, T, embed)
        o = F.linear(o, p['attn.proj.weight'], p['attn.proj.bias'])
        t = t + o * p['ls1.gamma']
        y = F.layer_norm(t, (embed,), p['norm2.weight'], p['norm2.bias'], 1e-6)
        if 'mlp.w12.weight' in p:
            x1, x2 = F.linear(y, p['mlp.w12.weight'], p['mlp.w12.bias']).chunk(
                2, dim=-1
            )
            y = F.linear(F.silu(x1) * x2, p['mlp.w3.weight'], p['mlp.w3.bias'])
        else:
            y = F.gelu(F.linear(y, p['mlp.fc1.weight'], p['mlp.fc1.bias']))
            y = F.linear(y, p['mlp.fc2.weight'], p['mlp.fc2.bias'])
        t = t + y * p['ls2.gamma']
    t = F.layer_norm(t, (embed,), sd['norm.weight'], sd['norm.bias'], 1e-6)
    return t[:, 0], t[:, 1 : 1 + R], t[:, 1 + R :]


def build_tiny(regs=REGS, swiglu=False, **kwargs):
    arch = dict(embed_dims=EMBED, num_layers=DEPTH, num_heads=HEADS)
    if swiglu:
        arch['ffn_type'] = 'swiglu_fused'
    model = DINOVisionTransformer(
        arch=arch,
        img_size=IMG,
        patch_size=PATCH,
        num_register_tokens=regs,
        out_type='raw',
        **kwargs,
    )
    return model.eval()


def bicubic_resize_pos_embed(pos, out):
    """(1, 1 + S*S, C) -> (1, 1 + out*out, C), written out in float64.

    Keys' cubic convolution (a = -0.75), half-pixel centres (source
    x = (i + 0.5) * S / out - 0.5), edge indices clamped: what a bicubic
    resize to an exact size without antialiasing computes.
    """
    a, side = -0.75, math.isqrt(pos.shape[1] - 1)

    def cubic(d):
        d = abs(d)
        if d <= 1:
            return ((a + 2) * d - (a + 3)) * d * d + 1
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d < 2 else 0.0

    w = torch.zeros(out, side, dtype=torch.float64)
    for i in range(out):
        x = (i + 0.5) * side / out - 0.5
        for j in range(math.floor(x) - 1, math.floor(x) + 3):
            w[i, min(max(j, 0), side - 1)] += cubic(x - j)
    grid = pos[0, 1:].double().reshape(side, side, -1)
    new = torch.einsum('ih,jw,hwc->ijc', w, w, grid)  # (out, out, C)
    new = new.reshape(1, out * out, -1)
    return torch.cat([pos[:, :1].double(), new], dim=1).to(pos.dtype)


@pytest.mark.parametrize(
    'swiglu,chunks', [(False, 0), (False, 2), (True, 0), (True, 1)]
)
def test_dinov2_equivalence(swiglu, chunks):
    sd = make_hub_state_dict(swiglu=swiglu, chunks=chunks)
    model = build_tiny(swiglu=swiglu)
    result = model.load_state_dict(dinov2_to_mmssl(sd), strict=True)
    assert not result.missing_keys and not result.unexpected_keys

    torch.manual_seed(1)
    # native grid (56 -> 4x4), larger non-square and smaller inputs
    for hw in [(56, 56), (98, 70), (28, 42), (224, 224)]:
        x = torch.randn(2, 3, *hw)
        ref_cls, ref_reg, ref_patch = ref_dinov2_forward(sd, x)
        with torch.no_grad():
            out = model(x)[0]
        torch.testing.assert_close(out[:, 0], ref_cls, atol=1e-4, rtol=0)
        torch.testing.assert_close(
            out[:, 1 : 1 + REGS], ref_reg, atol=1e-4, rtol=0
        )
        torch.testing.assert_close(
            out[:, 1 + REGS :], ref_patch, atol=1e-4, rtol=0
        )


def test_dinov2_equivalence_mask_and_antialias():
    sd = make_hub_state_dict(seed=3)
    model = build_tiny(interpolate_offset=0.0, interpolate_antialias=True)
    model.load_state_dict(dinov2_to_mmssl(sd), strict=True)
    x = torch.randn(2, 3, 70, 84)
    masks = torch.rand(2, 30) > 0.5
    ref_cls, _, ref_patch = ref_dinov2_forward(
        sd, x, masks=masks, interpolate_offset=0.0, interpolate_antialias=True
    )
    with torch.no_grad():
        out = model(x, mask=masks.reshape(2, 5, 6))[0]
    torch.testing.assert_close(out[:, 0], ref_cls, atol=1e-4, rtol=0)
    torch.testing.assert_close(
        out[:, 1 + REGS :], ref_patch, atol=1e-4, rtol=0
    )


def test_round_trip_exact():
    model = build_tiny()
    model.init_weights()
    sd = model.state_dict()
    hub = mmssl_to_dinov2(sd)
    assert hub['mask_token'].shape == (1, EMBED)
    assert 'blocks.1.ls2.gamma' in hub and 'norm.weight' in hub
    back = dinov2_to_mmssl(hub)
    assert list(back) == list(sd) or set(back) == set(sd)
    for k in sd:
        assert torch.equal(back[k], sd[k]), k
    chunked = mmssl_to_dinov2(sd, num_chunks=2)
    assert 'blocks.1.1.attn.qkv.weight' in chunked
    back = dinov2_to_mmssl(chunked)
    assert all(torch.equal(back[k], sd[k]) for k in sd)
    with pytest.raises(ValueError, match='num_chunks'):
        mmssl_to_dinov2(sd, num_chunks=3)


def test_unknown_keys_raise():
    sd = make_hub_state_dict()
    sd['blocks.0.weird.weight'] = torch.zeros(1)
    with pytest.raises(KeyError, match='weird'):
        dinov2_to_mmssl(sd)
    out = dinov2_to_mmssl(sd, strict=False)
    assert not any('weird' in k for k in out)


def test_timm_layout():
    sd = make_hub_state_dict(swiglu=True)
    timm_sd = dinov2_to_timm(sd)
    assert 'mask_token' not in timm_sd
    assert 'blocks.0.mlp.fc1.weight' in timm_sd
    assert 'blocks.0.mlp.w12.weight' not in timm_sd
    # registers: class token absorbs its position embedding
    torch.testing.assert_close(
        timm_sd['cls_token'], sd['cls_token'] + sd['pos_embed'][:, :1]
    )
    assert timm_sd['pos_embed'].shape[1] == sd['pos_embed'].shape[1] - 1
    assert torch.equal(timm_sd['reg_token'], sd['register_tokens'])
    # without registers the layout is the plain DINOv2 one
    sd0 = make_hub_state_dict(regs=0)
    model = build_tiny(regs=0)
    model.load_state_dict(dinov2_to_mmssl(sd0))
    timm0 = mmssl_to_timm(model.state_dict())
    assert set(timm0) == set(sd0) - {'mask_token'}
    assert timm0['blocks.1.ls1.gamma'].shape == (EMBED,)


def test_converter_scripts(tmp_path):
    sd = make_hub_state_dict(chunks=2)
    src = tmp_path / 'dinov2.pth'
    torch.save(sd, src)
    dst = tmp_path / 'mmssl.pth'
    _load_tool('dinov2_to_mmssl').main(
        [
            str(src),
            str(dst),
            '--prefix',
            'backbone.',
            '--prefix',
            'teacher.backbone.',
        ]
    )
    ckpt = torch.load(dst, weights_only=True)
    assert ckpt['meta']['num_register_tokens'] == REGS
    assert ckpt['meta']['num_layers'] == DEPTH
    state = ckpt['state_dict']
    model = build_tiny()
    for prefix in ('backbone.', 'teacher.backbone.'):
        part = {
            k[len(prefix) :]: v
            for k, v in state.items()
            if k.startswith(prefix)
        }
        res = model.load_state_dict(part, strict=True)
        assert not res.missing_keys and not res.unexpected_keys

    # mmssl (teacher preferred) -> dinov2 hub layout and back
    hub = tmp_path / 'back.pth'
    _load_tool('mmssl_to_dinov2').main([str(dst), str(hub)])
    hub_sd = torch.load(hub, weights_only=True)
    assert set(hub_sd) == {
        re.sub(r'blocks\.\d+\.(\d+)', r'blocks.\1', k) for k in sd
    }
    timm_path = tmp_path / 'timm.pth'
    _load_tool('mmssl_to_timm').main(
        [str(dst), str(timm_path), '--src-prefix', 'backbone.']
    )
    assert 'reg_token' in torch.load(timm_path, weights_only=True)


def test_training_checkpoint_and_pos_embed_resize(tmp_path):
    """A DINOv2 teacher checkpoint at 518 px loads into a 224-px config."""
    sd = make_hub_state_dict(img=518, regs=0)
    wrapped = {
        'teacher': {
            **{'backbone.' + k: v for k, v in sd.items()},
            'dino_head.mlp.0.weight': torch.zeros(2, 2),
        }
    }
    src = tmp_path / 'teacher_checkpoint.pth'
    torch.save(wrapped, src)
    dst = tmp_path / 'out.pth'
    _load_tool('dinov2_to_mmssl').main([str(src), str(dst), '--prefix', ''])
    state = torch.load(dst, weights_only=True)['state_dict']
    model = DINOVisionTransformer(
        arch=dict(embed_dims=EMBED, num_layers=DEPTH, num_heads=HEADS),
        img_size=224,
        patch_size=PATCH,
    )
    res = model.load_state_dict(state, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    assert model.pos_embed.shape == (1, 1 + 16 * 16, EMBED)
    torch.testing.assert_close(
        model.pos_embed,
        bicubic_resize_pos_embed(sd['pos_embed'], 16),
        atol=1e-5,
        rtol=0,
    )


def test_pretrained_init_cfg_from_converted(tmp_path):
    """The converted file initialises a backbone via init_cfg Pretrained."""
    sd = make_hub_state_dict(img=518, regs=REGS, seed=5)
    src = tmp_path / 'hub.pth'
    torch.save(sd, src)
    dst = tmp_path / 'mmssl.pth'
    _load_tool('dinov2_to_mmssl').main([str(src), str(dst)])
    model = DINOVisionTransformer(
        arch=dict(embed_dims=EMBED, num_layers=DEPTH, num_heads=HEADS),
        img_size=224,
        patch_size=PATCH,
        num_register_tokens=REGS,
        out_type='raw',
        init_cfg=dict(
            type='Pretrained', checkpoint=str(dst), prefix='backbone.'
        ),
    )
    model.init_weights()
    torch.testing.assert_close(
        model.layers[1].ffn.gamma2.weight, sd['blocks.1.ls2.gamma']
    )
    torch.testing.assert_close(model.mask_token, sd['mask_token'][0])
    model.eval()
    # model grid is 16x16: the 37x37 pos-embed is resized at load; the
    # reference gets the same resize computed independently
    x = torch.randn(1, 3, 224, 224)
    ref_sd = dict(sd, pos_embed=bicubic_resize_pos_embed(sd['pos_embed'], 16))
    ref_cls, _, ref_patch = ref_dinov2_forward(ref_sd, x)
    with torch.no_grad():
        out = model(x)[0]
    torch.testing.assert_close(out[:, 0], ref_cls, atol=1e-4, rtol=0)
    torch.testing.assert_close(
        out[:, 1 + REGS :], ref_patch, atol=1e-4, rtol=0
    )
