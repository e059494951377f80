"""DINOv3 hub / HF transformers <-> mmssl layouts, checked numerically
against the independent reference forward in tests/support/dinov3_ref.py."""

import pytest
import torch

from mmssl.checkpoint.layouts import (
    dinov3_to_mmssl,
    hf_dinov3_rope_periods,
    hf_dinov3_to_mmssl,
    is_timm_dinov3,
    mmssl_to_dinov3,
    timm_dinov3_to_dinov3,
)
from mmssl.models.backbones import DINOv3ViT
from mmssl.models.layers.rope import rope_periods
from tests.support.dinov3_ref import make_hub_state_dict, ref_dinov3_forward

EMBED, HEADS = 32, 2
SIZES = [(224, 224), (160, 256)]
#: name -> (hub state-dict kwargs, extra model kwargs)
VARIANTS = {
    'mlp_regs': (dict(depth=3, regs=4), {}),
    'swiglu_regs': (dict(depth=2, regs=4, swiglu=True, ffn_ratio=6), {}),
    'mlp_untied_noreg': (
        dict(depth=2, regs=0, cls_norm=True, local_cls_norm=True),
        dict(untie_cls_and_patch_norms=True),
    ),
}


def build(depth, regs=4, swiglu=False, ffn_ratio=4.0, local=False, **kw):
    arch = dict(
        embed_dims=EMBED,
        num_layers=depth,
        num_heads=HEADS,
        feedforward_channels=int(EMBED * ffn_ratio),
        ffn_type='swiglu' if swiglu else 'mlp',
    )
    return DINOv3ViT(
        arch=arch,
        num_register_tokens=regs,
        untie_global_and_local_cls_norm=local,
        out_type='raw',
        **kw,
    ).eval()


def variant(name, seed=0):
    sd_kw, model_kw = VARIANTS[name]
    sd = make_hub_state_dict(embed=EMBED, heads=HEADS, seed=seed, **sd_kw)
    keep = ('depth', 'regs', 'swiglu', 'ffn_ratio')
    model = build(
        **{k: v for k, v in sd_kw.items() if k in keep},
        local=sd_kw.get('local_cls_norm', False),
        **model_kw,
    )
    return sd, model


def assert_matches_reference(model, sd, x, masks=None, atol=1e-4):
    """Compare CLS, registers and patches; return the max abs difference."""
    regs = model.num_register_tokens
    ref = ref_dinov3_forward(sd, x, HEADS, masks=masks)
    with torch.no_grad():
        out = model(x.to(model.cls_token.dtype), mask=masks)[0]
    got = (out[:, 0], out[:, 1 : 1 + regs], out[:, 1 + regs :])
    worst = 0.0
    for name, g, r in zip(('cls', 'registers', 'patches'), got, ref):
        assert g.shape == r.shape, name
        torch.testing.assert_close(g.double(), r, atol=atol, rtol=0, msg=name)
        worst = max(
            worst, (g.double() - r).abs().max().item() if g.numel() else 0
        )
    return worst


@pytest.mark.parametrize('name', sorted(VARIANTS))
def test_converted_hub_weights_match_reference(name):
    sd, model = variant(name)
    res = model.load_state_dict(dinov3_to_mmssl(sd), strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    torch.manual_seed(1)
    for hw in SIZES:
        worst = assert_matches_reference(model, sd, torch.randn(2, 3, *hw))
        print(f'{name} {hw[0]}x{hw[1]}: max abs diff {worst:.2e}')


def test_masks_attention_and_float64():
    sd, model = variant('mlp_regs', seed=2)
    model.load_state_dict(dinov3_to_mmssl(sd))
    x = torch.randn(2, 3, 160, 256)
    masks = torch.rand(2, 160) > 0.5
    assert_matches_reference(model, sd, x, masks=masks)
    # in float64 the two forwards agree to rounding
    model.double()
    assert_matches_reference(model, sd, x, masks=masks, atol=1e-10)
    *_, ref_attn = ref_dinov3_forward(sd, x, HEADS, attn=True)
    attn = model.get_last_selfattention(x.double())
    torch.testing.assert_close(attn, ref_attn, atol=1e-10, rtol=0)


def test_round_trips_are_exact():
    sd, model = variant('swiglu_regs', seed=3)
    mm = dinov3_to_mmssl(sd)
    back = mmssl_to_dinov3(mm)
    assert set(back) == set(sd)
    assert all(torch.equal(back[k], sd[k]) for k in sd)
    model.init_weights()
    own = model.state_dict()
    again = dinov3_to_mmssl(mmssl_to_dinov3(own))
    assert list(again) == list(own)
    assert all(torch.equal(again[k], own[k]) for k in own)
    assert mm['mask_token'].shape == (EMBED,)
    assert back['mask_token'].shape == (1, EMBED)


def test_unmasked_model_exports_an_all_ones_bias_mask():
    """A model trained without the K-bias mask keeps its function in the
    hub layout (whose released models all mask): an all-ones mask."""
    model = build(depth=2, mask_k_bias=False)
    model.init_weights()
    with torch.no_grad():
        for layer in model.layers:
            layer.attn.qkv.bias.normal_()
    hub = mmssl_to_dinov3(model.state_dict())
    assert torch.equal(hub['blocks.0.attn.qkv.bias_mask'], torch.ones(96))
    assert 'blocks.0.attn.qkv.bias_mask' not in mmssl_to_dinov3(
        model.state_dict(), add_bias_mask=False
    )
    assert_matches_reference(model, hub, torch.randn(1, 3, 64, 96))


def test_unknown_keys_are_named():
    sd, _ = variant('mlp_regs')
    sd['blocks.0.weird.weight'] = torch.zeros(1)
    sd['head.weight'] = torch.zeros(1)  # a head is dropped silently
    with pytest.raises(KeyError, match='weird'):
        dinov3_to_mmssl(sd)
    out = dinov3_to_mmssl(sd, strict=False)
    assert not any('weird' in k or 'head' in k for k in out)
    with pytest.raises(KeyError, match='bogus'):
        mmssl_to_dinov3({'bogus.weight': torch.zeros(1)})


def to_hf(sd):
    """Hub weights -> HF transformers ``DINOv3ViTModel`` key names: q, k,
    v split, the masked key bias not stored, periods not stored."""
    out = {}
    ren = {
        'cls_token': 'embeddings.cls_token',
        'storage_tokens': 'embeddings.register_tokens',
        'patch_embed.proj.weight': 'embeddings.patch_embeddings.weight',
        'patch_embed.proj.bias': 'embeddings.patch_embeddings.bias',
        'norm.weight': 'norm.weight',
        'norm.bias': 'norm.bias',
    }
    glu = {'w1': 'gate_proj', 'w2': 'up_proj', 'w3': 'down_proj'}
    mlp = {'fc1': 'up_proj', 'fc2': 'down_proj'}
    for key, v in sd.items():
        if key in ren:
            out[ren[key]] = v
        elif key == 'mask_token':
            out['embeddings.mask_token'] = v.reshape(1, 1, -1)
        elif key.startswith('blocks.'):
            _, i, rest = key.split('.', 2)
            b = f'layer.{i}.'
            if rest.startswith('attn.qkv.') and not rest.endswith('mask'):
                kind = rest.split('.')[-1]
                for part, name in zip(v.chunk(3), ('q', 'k', 'v')):
                    if not (kind == 'bias' and name == 'k'):
                        out[f'{b}attention.{name}_proj.{kind}'] = part
            elif rest.startswith('attn.proj.'):
                out[b + 'attention.o_proj.' + rest.split('.')[-1]] = v
            elif rest.startswith(('ls1', 'ls2')):
                out[b + f'layer_scale{rest[2]}.lambda1'] = v
            elif rest.startswith('mlp.'):
                _, lin, kind = rest.split('.')
                out[f'{b}mlp.{glu.get(lin) or mlp[lin]}.{kind}'] = v
            elif rest.startswith('norm'):
                out[b + rest] = v
    return out


@pytest.mark.parametrize('prefix', ['', 'model.'])
@pytest.mark.parametrize('name', ['mlp_regs', 'swiglu_regs'])
def test_hf_transformers_weights_match_reference(name, prefix):
    """Files name the blocks ``layer.N``; a live transformers 5 model
    (``save_file(model.state_dict())``) names them ``model.layer.N``."""
    sd, model = variant(name, seed=4)
    # HF computes the default periods (base 100): give the reference those
    sd['rope_embed.periods'] = model.rope_embed.periods.clone()
    hf = {
        (prefix + k if k.startswith('layer.') else k): v
        for k, v in to_hf(sd).items()
    }
    assert not any('k_proj.bias' in k for k in hf)
    mm = hf_dinov3_to_mmssl(hf)
    assert 'rope_embed.periods' not in mm
    # the missing key bias stays masked (zero) when training goes on
    for i in range(VARIANTS[name][0]['depth']):
        mask = mm[f'layers.{i}.attn.qkv.bias_mask']
        assert torch.equal(mask, sd[f'blocks.{i}.attn.qkv.bias_mask'])
    res = model.load_state_dict(mm, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    assert_matches_reference(model, sd, torch.randn(1, 3, 160, 256))
    with pytest.raises(KeyError, match='pooler'):
        hf_dinov3_to_mmssl({**hf, 'pooler.dense.weight': torch.zeros(1)})


@pytest.mark.parametrize('name', ['', 'proj.', 'projection.'])
def test_hf_patch_embedding_names(name):
    """transformers versions name the patch convolution differently."""
    w = torch.randn(EMBED, 3, 16, 16)
    out = hf_dinov3_to_mmssl({f'embeddings.patch_embeddings.{name}weight': w})
    assert list(out) == ['patch_embed.projection.weight']
    assert out['patch_embed.projection.weight'] is w


def to_timm(sd):
    """Hub weights -> timm DINOv3 (eva.py) names, from timm's own
    checkpoint filter: storage_tokens -> reg_token, ls1/ls2.gamma ->
    gamma_1/gamma_2, qkv.bias -> q_bias and v_bias (the key bias dropped),
    mlp.w1/w2/w3 -> fc1_g/fc1_x/fc2; mask_token, bias_mask and the periods
    are not kept."""
    ren = (
        ('storage_tokens', 'reg_token'),
        ('ls1.gamma', 'gamma_1'),
        ('ls2.gamma', 'gamma_2'),
        ('mlp.w1.', 'mlp.fc1_g.'),
        ('mlp.w2.', 'mlp.fc1_x.'),
        ('mlp.w3.', 'mlp.fc2.'),
    )
    out = {}
    for key, v in sd.items():
        if key.endswith(('periods', 'bias_mask', 'mask_token')):
            continue
        if key.endswith('attn.qkv.bias'):
            q, _, val = v.chunk(3)
            out[key.replace('qkv.bias', 'q_bias')] = q
            out[key.replace('qkv.bias', 'v_bias')] = val
            continue
        for src, dst in ren:
            key = key.replace(src, dst)
        out[key] = v
    return out


@pytest.mark.parametrize('name', ['mlp_regs', 'swiglu_regs'])
def test_timm_dinov3_weights_match_reference(name):
    sd, model = variant(name, seed=5)
    # timm keeps no periods: the model's own (base 100) are used
    sd['rope_embed.periods'] = model.rope_embed.periods.clone()
    timm = to_timm(sd)
    timm['head.weight'] = torch.zeros(3, EMBED)  # a classifier: dropped
    assert is_timm_dinov3(timm) and 'pos_embed' not in timm
    hub = timm_dinov3_to_dinov3(timm)
    # the key bias comes back zero and masked, as the hub files mask it
    assert torch.equal(
        hub['blocks.0.attn.qkv.bias_mask'], sd['blocks.0.attn.qkv.bias_mask']
    )
    assert not hub['blocks.0.attn.qkv.bias'][EMBED : 2 * EMBED].any()
    mm = dinov3_to_mmssl(hub)
    res = model.load_state_dict(mm, strict=False)
    assert res.missing_keys == ['mask_token']  # timm keeps none
    assert not res.unexpected_keys
    assert_matches_reference(model, sd, torch.randn(1, 3, 64, 96))


def test_timm_dinov3_needs_both_biases():
    sd, _ = variant('mlp_regs')
    timm = to_timm(sd)
    del timm['blocks.1.attn.v_bias']
    with pytest.raises(KeyError, match='block 1 .*v_bias'):
        timm_dinov3_to_dinov3(timm)


def test_hf_rope_periods_from_config():
    cfg = dict(hidden_size=32, num_attention_heads=2)
    assert torch.equal(hf_dinov3_rope_periods(cfg), rope_periods(16, 100.0))
    # transformers' inverse frequencies: 1 / theta ** arange(0, 1, 4 / hd)
    inv = 1 / 1000.0 ** torch.arange(0, 1, 4 / 16, dtype=torch.float64)
    got = hf_dinov3_rope_periods({**cfg, 'rope_theta': 1000.0})
    torch.testing.assert_close(got.double(), 1 / inv, rtol=1e-6, atol=0)
    nested = {**cfg, 'rope_parameters': {'rope_theta': 1000.0}}
    assert torch.equal(hf_dinov3_rope_periods(nested), got)
    for bad, match in (
        ({'rope_theta': -1.0}, 'positive'),
        ({'rope_theta': float('inf')}, 'positive'),
        ({'rope_parameters': {'rope_type': 'yarn'}}, 'yarn'),
        ({'rope_scaling': {'factor': 2.0}}, 'scaling'),
        ({'hidden_size': 24, 'num_attention_heads': 4}, 'multiple of 4'),
    ):
        with pytest.raises(ValueError, match=match):
            hf_dinov3_rope_periods({**cfg, **bad})
