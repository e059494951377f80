"""tools/model_converters/{dinov3_to_mmssl,mmssl_to_dinov3}.py, file in,
file out: hub .pth, a training checkpoint, HF safetensors, the refusal of
a code-running pickle, and the way back."""

import pytest
import torch

from mmssl.models.backbones import DINOv3ViT
from tests.support.dinov3_ref import make_hub_state_dict, ref_dinov3_forward
from tests.support.tools import load_tool

EMBED, DEPTH, HEADS, REGS = 32, 2, 2, 4


def tiny_model():
    arch = dict(embed_dims=EMBED, num_layers=DEPTH, num_heads=HEADS)
    return DINOv3ViT(arch=arch, num_register_tokens=REGS, out_type='raw')


def part(state, prefix):
    n = len(prefix)
    return {k[n:]: v for k, v in state.items() if k.startswith(prefix)}


def test_hub_file_to_mmssl_and_back(tmp_path, capsys):
    sd = make_hub_state_dict(embed=EMBED, depth=DEPTH, heads=HEADS, seed=7)
    src = tmp_path / 'dinov3_vits16_pretrain.pth'
    torch.save(sd, src)
    dst = tmp_path / 'mmssl.pth'
    load_tool('model_converters/dinov3_to_mmssl.py').main(
        [str(src), str(dst), '--prefix', 'backbone.']
        + ['--prefix', 'teacher.backbone.']
    )
    assert 'Saved' in capsys.readouterr().out
    ckpt = torch.load(dst, weights_only=True)
    assert ckpt['meta']['converted_from'] == 'dinov3-hub'
    assert ckpt['meta']['num_register_tokens'] == REGS
    assert ckpt['meta']['num_layers'] == DEPTH
    assert ckpt['meta']['patch_size'] == 16
    model = tiny_model().eval()
    for prefix in ('backbone.', 'teacher.backbone.'):
        res = model.load_state_dict(part(ckpt['state_dict'], prefix))
        assert not res.missing_keys and not res.unexpected_keys
    x = torch.randn(1, 3, 160, 256)
    cls, _, patches = ref_dinov3_forward(sd, x, HEADS)
    with torch.no_grad():
        out = model(x)[0]
    torch.testing.assert_close(out[:, 0].double(), cls, atol=1e-4, rtol=0)
    torch.testing.assert_close(
        out[:, 1 + REGS :].double(), patches, atol=1e-4, rtol=0
    )

    # mmssl (teacher preferred) -> hub file, equal to the original
    hub = tmp_path / 'back.pth'
    load_tool('model_converters/mmssl_to_dinov3.py').main([str(dst), str(hub)])
    back = torch.load(hub, weights_only=True)
    assert set(back) == set(sd)
    assert all(torch.equal(back[k], sd[k]) for k in sd)


def test_training_checkpoint_and_hf_safetensors(tmp_path):
    sd = make_hub_state_dict(embed=EMBED, depth=DEPTH, heads=HEADS, seed=8)
    teacher = {'backbone.' + k: v for k, v in sd.items()}
    teacher['dino_head.mlp.0.weight'] = torch.zeros(2, 2)
    src = tmp_path / 'teacher_checkpoint.pth'
    torch.save({'teacher': teacher}, src)
    dst = tmp_path / 'out.pth'
    tool = load_tool('model_converters/dinov3_to_mmssl.py')
    tool.main([str(src), str(dst), '--prefix', ''])
    state = torch.load(dst, weights_only=True)['state_dict']
    assert torch.equal(state['register_tokens'], sd['storage_tokens'])
    assert not any('dino_head' in k for k in state)

    # HF transformers safetensors: detected from the keys
    from safetensors.torch import save_file

    model = tiny_model()
    model.load_state_dict(state)
    hf = {
        'embeddings.cls_token': sd['cls_token'],
        'embeddings.mask_token': sd['mask_token'].reshape(1, 1, -1),
        'embeddings.register_tokens': sd['storage_tokens'],
        'embeddings.patch_embeddings.weight': sd['patch_embed.proj.weight'],
        'embeddings.patch_embeddings.bias': sd['patch_embed.proj.bias'],
        'norm.weight': sd['norm.weight'],
        'norm.bias': sd['norm.bias'],
    }
    for i in range(DEPTH):
        b, h = f'blocks.{i}.', f'layer.{i}.'
        q, k, v = sd[b + 'attn.qkv.weight'].chunk(3)
        qb, _, vb = sd[b + 'attn.qkv.bias'].chunk(3)
        hf.update(
            {
                h + 'attention.q_proj.weight': q,
                h + 'attention.k_proj.weight': k,
                h + 'attention.v_proj.weight': v,
                h + 'attention.q_proj.bias': qb,
                h + 'attention.v_proj.bias': vb,
                h + 'attention.o_proj.weight': sd[b + 'attn.proj.weight'],
                h + 'attention.o_proj.bias': sd[b + 'attn.proj.bias'],
                h + 'layer_scale1.lambda1': sd[b + 'ls1.gamma'],
                h + 'layer_scale2.lambda1': sd[b + 'ls2.gamma'],
                h + 'mlp.up_proj.weight': sd[b + 'mlp.fc1.weight'],
                h + 'mlp.up_proj.bias': sd[b + 'mlp.fc1.bias'],
                h + 'mlp.down_proj.weight': sd[b + 'mlp.fc2.weight'],
                h + 'mlp.down_proj.bias': sd[b + 'mlp.fc2.bias'],
            }
        )
        for n in ('norm1', 'norm2'):
            for t in ('weight', 'bias'):
                hf[f'{h}{n}.{t}'] = sd[f'{b}{n}.{t}']
    hf_src = tmp_path / 'model.safetensors'
    save_file({k: v.contiguous() for k, v in hf.items()}, str(hf_src))
    hf_dst = tmp_path / 'hf.pth'
    tool.main([str(hf_src), str(hf_dst), '--prefix', ''])
    ckpt = torch.load(hf_dst, weights_only=True)
    assert ckpt['meta']['converted_from'] == 'dinov3-hf'
    hf_state = ckpt['state_dict']
    assert 'rope_embed.periods' not in hf_state
    res = model.load_state_dict(hf_state, strict=True)
    assert not res.missing_keys and not res.unexpected_keys
    # HF computes the default periods: the reference gets those too
    ref_sd = dict(sd, **{'rope_embed.periods': model.rope_embed.periods})
    x = torch.randn(1, 3, 64, 96)
    cls, _, _ = ref_dinov3_forward(ref_sd, x, HEADS)
    with torch.no_grad():
        out = model.eval()(x)[0]
    torch.testing.assert_close(out[:, 0].double(), cls, atol=1e-4, rtol=0)


def test_refuses_code_running_pickle_and_bad_keys(tmp_path, capsys):
    from tests.test_checkpoint.payload import save_payload_checkpoint

    sd = make_hub_state_dict(embed=EMBED, depth=DEPTH, heads=HEADS)
    marker = tmp_path / 'ran'
    src = save_payload_checkpoint(tmp_path / 'evil.pth', marker, sd)
    dst = tmp_path / 'out.pth'
    tool = load_tool('model_converters/dinov3_to_mmssl.py')
    with pytest.raises(SystemExit) as err:
        tool.main([src, str(dst)])
    assert err.value.code == 2
    assert '--trusted' in capsys.readouterr().err
    assert not marker.exists() and not dst.exists()
    tool.main([src, str(dst), '--trusted'])
    assert marker.exists() and dst.exists()

    bad = dict(sd, **{'blocks.0.extra.weight': torch.zeros(1)})
    torch.save(bad, tmp_path / 'bad.pth')
    with pytest.raises(KeyError, match='extra'):
        tool.main([str(tmp_path / 'bad.pth'), str(tmp_path / 'x.pth')])
    tool.main([str(tmp_path / 'bad.pth'), str(dst), '--no-strict'])
    # a DINOv2-style mmssl backbone is not a DINOv3ViT
    v2 = {'backbone.patch_embed.projection.weight': torch.zeros(1)}
    torch.save({'state_dict': v2}, tmp_path / 'v2.pth')
    back = load_tool('model_converters/mmssl_to_dinov3.py')
    with pytest.raises(SystemExit, match='rope_embed.periods'):
        back.main([str(tmp_path / 'v2.pth'), str(tmp_path / 'hub.pth')])


def test_hf_rope_theta_from_config_json(tmp_path):
    """With config.json beside model.safetensors (rope_theta 1000), the
    periods are written; a live model's model.layer.N names convert."""
    import json

    from safetensors.torch import save_file

    from mmssl.models.layers.rope import rope_periods

    hf = {
        'embeddings.cls_token': torch.zeros(1, 1, EMBED),
        'embeddings.patch_embeddings.weight': torch.zeros(EMBED, 3, 16, 16),
        'model.layer.0.norm1.weight': torch.ones(EMBED),
    }
    src = tmp_path / 'model.safetensors'
    save_file(hf, str(src))
    cfg = dict(hidden_size=EMBED, num_attention_heads=HEADS, rope_theta=1e3)
    (tmp_path / 'config.json').write_text(json.dumps(cfg))
    tool = load_tool('model_converters/dinov3_to_mmssl.py')
    out = tool.main([str(src), str(tmp_path / 'o.pth'), '--prefix', ''])
    want = rope_periods(EMBED // HEADS, 1000.0)
    torch.testing.assert_close(out['rope_embed.periods'], want)
    assert 'layers.0.ln1.weight' in out
