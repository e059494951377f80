"""An independent reference of the released DINOv3 ViT, and fake weights.

Written from the DINOv3 paper (Siméoni et al., 2025, arXiv 2508.10104) and
the public key layout of the facebookresearch/dinov3 hub files; it imports
nothing from mmssl and works directly on a hub-layout state dict, in
float64. The rotary embedding is written with complex numbers: head
dimension ``d`` and ``d + D/2`` form the complex number that is turned by
the angle of pair ``d`` (row angles for the first D/4 pairs, column angles
for the next D/4), which is the rotate-half convention of the releases.
"""

import math
import re

import torch
import torch.nn.functional as F

PATCH = 16


def make_hub_state_dict(
    embed=32,
    depth=2,
    heads=2,
    regs=4,
    swiglu=False,
    ffn_ratio=4.0,
    cls_norm=False,
    local_cls_norm=False,
    seed=0,
):
    """Random hub-layout weights: norms, LayerScale, tokens all random.

    The qkv bias is random in all three parts (so a model that ignores
    ``bias_mask`` computes something else); ``bias_mask`` has the released
    pattern (1 for q and v, 0 for k); the periods are the default ones
    (base 100) times a random factor near 1, so they must be loaded.
    """
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.1):
        return torch.randn(*shape, generator=g) * scale

    head_dims = embed // heads
    base = 100 ** (4 * torch.arange(head_dims // 4) / head_dims)
    sd = {
        'cls_token': rnd(1, 1, embed, scale=1.0),
        'mask_token': rnd(1, embed, scale=1.0),
        'patch_embed.proj.weight': rnd(embed, 3, PATCH, PATCH, scale=0.02),
        'patch_embed.proj.bias': rnd(embed),
        'rope_embed.periods': base
        * (1 + 0.2 * torch.rand(base.shape, generator=g)),
        'norm.weight': 1 + rnd(embed),
        'norm.bias': rnd(embed),
    }
    if regs:
        sd['storage_tokens'] = rnd(1, regs, embed, scale=1.0)
    for name, on in (
        ('cls_norm', cls_norm),
        ('local_cls_norm', local_cls_norm),
    ):
        if on:
            sd[f'{name}.weight'] = 1 + rnd(embed)
            sd[f'{name}.bias'] = rnd(embed)
    hidden = int(embed * ffn_ratio)
    d = int(hidden * 2 / 3)
    glu = d + (-d % 8)
    mask = torch.cat(
        [torch.ones(embed), torch.zeros(embed), torch.ones(embed)]
    )
    for i in range(depth):
        b = f'blocks.{i}.'
        sd.update(
            {
                b + 'norm1.weight': 1 + rnd(embed),
                b + 'norm1.bias': rnd(embed),
                b + 'attn.qkv.weight': rnd(3 * embed, embed, scale=0.3),
                b + 'attn.qkv.bias': rnd(3 * embed, scale=1.0),
                b + 'attn.qkv.bias_mask': mask.clone(),
                b + 'attn.proj.weight': rnd(embed, embed, scale=0.2),
                b + 'attn.proj.bias': rnd(embed),
                b + 'ls1.gamma': 0.5 + rnd(embed),
                b + 'norm2.weight': 1 + rnd(embed),
                b + 'norm2.bias': rnd(embed),
                b + 'ls2.gamma': 0.5 + rnd(embed),
            }
        )
        if swiglu:
            for name, shape in (
                ('w1', (glu, embed)),
                ('w2', (glu, embed)),
                ('w3', (embed, glu)),
            ):
                sd[f'{b}mlp.{name}.weight'] = rnd(*shape, scale=0.2)
                sd[f'{b}mlp.{name}.bias'] = rnd(shape[0])
        else:
            sd[b + 'mlp.fc1.weight'] = rnd(hidden, embed, scale=0.2)
            sd[b + 'mlp.fc1.bias'] = rnd(hidden)
            sd[b + 'mlp.fc2.weight'] = rnd(embed, hidden, scale=0.2)
            sd[b + 'mlp.fc2.bias'] = rnd(embed)
    return sd


def rope_angles(periods, rows, cols):
    """Angles (rows*cols, D/2) of each patch, patches row-major.

    A patch centre (i + 1/2, j + 1/2) is mapped to [-1, 1] on each axis by
    its own count; pair k < D/4 turns by 2 pi y / period_k, pair D/4 + k by
    2 pi x / period_k.
    """
    angles = []
    for i in range(rows):
        for j in range(cols):
            y = 2 * (i + 0.5) / rows - 1
            x = 2 * (j + 0.5) / cols - 1
            angles.append(
                [2 * math.pi * y / float(p) for p in periods]
                + [2 * math.pi * x / float(p) for p in periods]
            )
    return torch.tensor(angles, dtype=torch.float64)


def rotate(t, angles):
    """Turn pairs (d, d + D/2) of t (B, heads, N, D) by angles (N, D/2)."""
    half = t.shape[-1] // 2
    z = torch.complex(t[..., :half], t[..., half:])
    z = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1)


def _block(t, p, heads, angles, eps):
    B, T, C = t.shape
    hd = C // heads
    npre = T - angles.shape[0]  # CLS + registers: no rotation
    y = F.layer_norm(t, (C,), p['norm1.weight'], p['norm1.bias'], eps)
    bias = p['attn.qkv.bias'] * p['attn.qkv.bias_mask']
    qkv = y @ p['attn.qkv.weight'].T + bias
    q, k, v = qkv.reshape(B, T, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q = torch.cat([q[:, :, :npre], rotate(q[:, :, npre:], angles)], dim=2)
    k = torch.cat([k[:, :, :npre], rotate(k[:, :, npre:], angles)], dim=2)
    att = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(-1)
    o = (att @ v).transpose(1, 2).reshape(B, T, C)
    t = (
        t
        + (o @ p['attn.proj.weight'].T + p['attn.proj.bias']) * p['ls1.gamma']
    )
    y = F.layer_norm(t, (C,), p['norm2.weight'], p['norm2.bias'], eps)
    if 'mlp.w1.weight' in p:
        a = y @ p['mlp.w1.weight'].T + p['mlp.w1.bias']
        b = y @ p['mlp.w2.weight'].T + p['mlp.w2.bias']
        y = (a * torch.sigmoid(a) * b) @ p['mlp.w3.weight'].T + p[
            'mlp.w3.bias'
        ]
    else:
        h = y @ p['mlp.fc1.weight'].T + p['mlp.fc1.bias']
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        y = h @ p['mlp.fc2.weight'].T + p['mlp.fc2.bias']
    return t + y * p['ls2.gamma'], att


def ref_dinov3_forward(sd, x, heads, masks=None, eps=1e-5, attn=False):
    """Reference ``forward_features`` of a released DINOv3 ViT (eval mode).

    Args:
        sd (dict): Hub-layout weights.
        x (Tensor): Images (B, 3, H, W).
        heads (int): Attention heads.
        masks (Tensor, optional): Bool (B, N): patches -> mask token.
        attn (bool): Also return the last block's attention.

    Returns:
        tuple: CLS (B, C), registers (B, R, C), patches (B, N, C) after
        the final norm(s), float64 (and the attention if asked).
    """
    sd = {k: v.double() for k, v in sd.items()}
    blocks = {}
    for key, v in sd.items():
        m = re.match(r'blocks\.(\d+)\.(.+)', key)
        if m:
            blocks.setdefault(int(m[1]), {})[m[2]] = v
    x = x.double()
    B = x.shape[0]
    rows, cols = x.shape[2] // PATCH, x.shape[3] // PATCH
    w = sd['patch_embed.proj.weight']
    patches = []
    for i in range(rows):
        for j in range(cols):
            crop = x[
                :, :, i * PATCH : (i + 1) * PATCH, j * PATCH : (j + 1) * PATCH
            ]
            patches.append(torch.einsum('bchw,ochw->bo', crop, w))
    t = torch.stack(patches, dim=1) + sd['patch_embed.proj.bias']
    if masks is not None:
        t = torch.where(masks[..., None], sd['mask_token'][0], t)
    regs = sd.get('storage_tokens', t.new_zeros(1, 0, t.shape[-1]))
    R = regs.shape[1]
    t = torch.cat(
        [sd['cls_token'].expand(B, -1, -1), regs.expand(B, -1, -1), t], 1
    )
    angles = rope_angles(sd['rope_embed.periods'], rows, cols)
    for i in sorted(blocks):
        t, att = _block(t, blocks[i], heads, angles, eps)
    C = t.shape[-1]
    out = F.layer_norm(t, (C,), sd['norm.weight'], sd['norm.bias'], eps)
    if 'cls_norm.weight' in sd:
        front = F.layer_norm(
            t[:, : 1 + R],
            (C,),
            sd['cls_norm.weight'],
            sd['cls_norm.bias'],
            eps,
        )
        out = torch.cat([front, out[:, 1 + R :]], dim=1)
    res = (out[:, 0], out[:, 1 : 1 + R], out[:, 1 + R :])
    return res + (att,) if attn else res
