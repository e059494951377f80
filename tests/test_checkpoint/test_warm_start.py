"""Warm start from each backbone format, with tiny synthetic checkpoints."""

import copy
import re
import sys
import types

import pytest
import torch
from torch import nn

from mmssl.checkpoint.layouts import mmssl_to_dinov2, mmssl_to_timm
from mmssl.checkpoint.warm_start import (
    WarmStartError,
    apply_warm_start,
    detect_format,
    grow_in_channels,
)
from mmssl.models.backbones import DINOVisionTransformer

ARCH = dict(embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=32)


def vit(
    seed: int,
    in_channels: int = 3,
    img_size: int = 32,
    regs: int = 1,
    ffn_type: str = None,
):
    torch.manual_seed(seed)
    arch = dict(ARCH, ffn_type=ffn_type) if ffn_type else ARCH
    model = DINOVisionTransformer(
        arch=arch,
        img_size=img_size,
        patch_size=8,
        num_register_tokens=regs,
        in_channels=in_channels,
        out_type='raw',
    )
    with torch.no_grad():  # every tensor random, LayerScale included
        for p in model.parameters():
            p.normal_(0, 0.2)
    return model.eval()


class Algo(nn.Module):
    """What apply_warm_start needs of a DINO-family algorithm."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.teacher = nn.ModuleDict(dict(backbone=copy.deepcopy(backbone)))


def to_hf(sd):
    """DINOv2 hub keys -> HF Dinov2Model keys, written by hand here."""
    out = {}
    top = {
        'cls_token': 'embeddings.cls_token',
        'pos_embed': 'embeddings.position_embeddings',
        'register_tokens': 'embeddings.register_tokens',
        'patch_embed.proj.weight': (
            'embeddings.patch_embeddings.projection.weight'
        ),
        'patch_embed.proj.bias': 'embeddings.patch_embeddings.projection.bias',
        'norm.weight': 'layernorm.weight',
        'norm.bias': 'layernorm.bias',
    }
    sub = {
        'norm1': 'norm1',
        'norm2': 'norm2',
        'attn.proj': 'attention.output.dense',
        'mlp.fc1': 'mlp.fc1',
        'mlp.fc2': 'mlp.fc2',
    }
    for key, value in sd.items():
        if key == 'mask_token':
            out['embeddings.mask_token'] = value.reshape(1, -1)
            continue
        if key in top:
            out[top[key]] = value
            continue
        n, rest = re.match(r'blocks\.(\d+)\.(.+)', key).groups()
        pre = f'encoder.layer.{n}.'
        if rest.startswith('attn.qkv.'):
            kind = rest.split('.')[-1]
            for name, part in zip(('query', 'key', 'value'), value.chunk(3)):
                out[f'{pre}attention.attention.{name}.{kind}'] = part
        elif rest.startswith('ls'):
            out[f'{pre}layer_scale{rest[2]}.lambda1'] = value
        else:
            mod, kind = rest.rsplit('.', 1)
            out[f'{pre}{sub[mod]}.{kind}'] = value
    return out


def features(model, x):
    with torch.no_grad():
        return model.eval()(x)[-1]


def save(obj, path):
    torch.save(obj, path)
    return str(path)


@pytest.mark.parametrize(
    'fmt', ['dinov2', 'dinov2_training', 'timm', 'hf_dinov2', 'mmssl']
)
def test_each_format_gives_the_source_features(tmp_path, fmt):
    src = vit(0)
    sd = src.state_dict()
    if fmt == 'dinov2':
        path = save(mmssl_to_dinov2(sd), tmp_path / 'hub.pth')
    elif fmt == 'dinov2_training':  # {'teacher': {'backbone.' ...}}
        ckpt = {'backbone.' + k: v for k, v in mmssl_to_dinov2(sd).items()}
        path = save({'teacher': ckpt}, tmp_path / 'train.pth')
    elif fmt == 'timm':
        timm = mmssl_to_timm(sd)
        timm['head.weight'] = torch.zeros(5, 16)  # a classifier: dropped
        path = save(timm, tmp_path / 'timm.pth')
    elif fmt == 'hf_dinov2':
        from safetensors.torch import save_file

        hf = {'dinov2.' + k: v for k, v in to_hf(mmssl_to_dinov2(sd)).items()}
        path = str(tmp_path / 'model.safetensors')
        save_file({k: v.contiguous() for k, v in hf.items()}, path)
    else:  # an mmssl algorithm checkpoint: teacher backbone wins
        state = {'teacher.backbone.' + k: v for k, v in sd.items()}
        state.update({'backbone.' + k: v * 0 for k, v in sd.items()})
        path = save({'state_dict': state, 'meta': {}}, tmp_path / 'e.pth')
    algo = Algo(vit(1))
    report = apply_warm_start(algo, dict(checkpoint=path))
    x = torch.randn(2, 3, 32, 32)
    want = features(src, x)
    assert torch.allclose(features(algo.backbone, x), want, atol=1e-5)
    assert torch.allclose(
        features(algo.teacher['backbone'], x), want, atol=1e-5
    )
    missing = ['mask_token'] if fmt == 'timm' else []
    assert report.missing == missing
    assert report.unexpected == [] and report.shape_mismatched == []
    assert len(report.matched) == len(sd) - len(missing)


def test_timm_packed_swiglu_becomes_w12_w3(tmp_path):
    arch = dict(ARCH, ffn_type='swiglu_fused')
    torch.manual_seed(0)
    src, dst = (
        DINOVisionTransformer(arch=arch, img_size=32, patch_size=8).eval()
        for _ in range(2)
    )
    with torch.no_grad():
        for p in src.parameters():
            p.normal_(0, 0.2)
    timm = mmssl_to_timm(src.state_dict())
    assert 'blocks.0.mlp.fc1.weight' in timm  # timm's packed SwiGLU
    algo = Algo(dst)
    path = save(timm, tmp_path / 'timm.pth')
    report = apply_warm_start(algo, dict(checkpoint=path))
    assert report.unexpected == [] and report.missing == ['mask_token']
    x = torch.randn(2, 3, 32, 32)
    assert torch.allclose(features(dst, x), features(src, x), atol=1e-5)


def test_detect_format_by_key_names():
    sd = mmssl_to_dinov2(vit(0).state_dict())
    assert detect_format(sd) == 'dinov2'
    assert (
        detect_format({k: v for k, v in sd.items() if k != 'mask_token'})
        == 'timm'
    )
    assert detect_format(to_hf(sd)) == 'hf_dinov2'
    assert (
        detect_format({'backbone.patch_embed.projection.weight': 0}) == 'mmssl'
    )
    assert detect_format({**sd, 'storage_tokens': 0}) == 'dinov3'
    assert (
        detect_format(
            {
                'embeddings.patch_embeddings.weight': 0,
                'layer.0.attention.q_proj.weight': 0,
            }
        )
        == 'hf_dinov3'
    )
    with pytest.raises(WarmStartError, match='warm_start.format'):
        detect_format({'conv1.weight': 0})


def test_stops_below_min_match_with_the_report(tmp_path):
    sd = mmssl_to_dinov2(vit(0).state_dict())
    half = {k: v for k, v in sd.items() if not k.startswith('blocks.1.')}
    path = save(half, tmp_path / 'half.pth')
    algo = Algo(vit(1))
    with pytest.raises(WarmStartError, match=r'only 22/36 \(61\.1%\)') as e:
        apply_warm_start(algo, dict(checkpoint=path))
    assert 'missing 14' in str(e.value)
    report = apply_warm_start(algo, dict(checkpoint=path, min_match=0.6))
    assert len(report.missing) == 14
    # one wrong shape among 36 tensors: 35/36 = 97.2% >= 95% passes
    sd['blocks.0.norm1.weight'] = torch.ones(8)
    report = apply_warm_start(algo, dict(checkpoint=save(sd, path)))
    assert report.shape_mismatched == [('layers.0.ln1.weight', (8,), (16,))]


def test_patch_embed_grows_to_more_channels(tmp_path):
    src = vit(0)
    path = save(mmssl_to_dinov2(src.state_dict()), tmp_path / 'hub.pth')
    algo = Algo(vit(1, in_channels=5))
    apply_warm_start(algo, dict(checkpoint=path))
    old = src.patch_embed.projection.weight.double()  # (16, 3, 8, 8)
    new = algo.backbone.patch_embed.projection.weight.double()
    assert new.shape == (16, 5, 8, 8)
    assert torch.equal(new[:, :3], old)
    for d in range(16):
        for c in (3, 4):
            for i in range(8):
                for j in range(8):
                    mean = sum(old[d, k, i, j] for k in range(3)) / 3
                    assert abs(new[d, c, i, j] - mean) < 1e-6
    assert torch.equal(
        algo.teacher['backbone'].patch_embed.projection.weight,
        algo.backbone.patch_embed.projection.weight,
    )
    with pytest.raises(ValueError, match='shrink'):
        grow_in_channels(torch.zeros(2, 3, 1, 1), 2)


def test_position_embedding_is_resized_to_the_model_grid(tmp_path):
    src = vit(0, img_size=32)  # 4 x 4 grid
    path = save(mmssl_to_dinov2(src.state_dict()), tmp_path / 'hub.pth')
    algo = Algo(vit(1, img_size=48))  # 6 x 6 grid
    report = apply_warm_start(algo, dict(checkpoint=path))
    pos = algo.backbone.pos_embed
    assert pos.shape == (1, 37, 16) and 'pos_embed' in report.matched
    assert torch.equal(pos[:, 0], src.pos_embed[:, 0])  # class row kept


def fake_dinov3(monkeypatch, **funcs):
    module = types.ModuleType('mmssl.checkpoint.layouts.dinov3')
    for name, fn in funcs.items():
        setattr(module, name, fn)
    monkeypatch.setitem(sys.modules, module.__name__, module)


@pytest.mark.parametrize('fmt', ['dinov3', 'hf_dinov3'])
def test_dinov3_formats_dispatch_to_the_dinov3_layouts(
    tmp_path, monkeypatch, fmt
):
    src = vit(0)
    seen = {}

    def convert(state_dict):
        seen['keys'] = sorted(state_dict)
        return src.state_dict()

    name = 'dinov3_to_mmssl' if fmt == 'dinov3' else 'hf_dinov3_to_mmssl'
    fake_dinov3(monkeypatch, **{name: convert})
    if fmt == 'dinov3':
        ckpt = {
            'storage_tokens': torch.zeros(1),
            'patch_embed.proj.weight': torch.zeros(1),
            'rope_embed.periods': torch.zeros(1),
        }
    else:
        ckpt = {
            'embeddings.patch_embeddings.weight': torch.zeros(1),
            'layer.0.attention.q_proj.weight': torch.zeros(1),
        }
    wrapped = {'teacher': {'backbone.' + k: v for k, v in ckpt.items()}}
    algo = Algo(vit(1))
    apply_warm_start(algo, dict(checkpoint=save(wrapped, tmp_path / 'a.pth')))
    assert seen['keys'] == sorted(ckpt)  # prefix found and stripped
    assert torch.equal(algo.teacher['backbone'].cls_token, src.cls_token)


def test_dinov3_without_its_layout_module_is_a_clear_error(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, 'mmssl.checkpoint.layouts.dinov3', None)
    path = save({'storage_tokens': torch.zeros(1)}, tmp_path / 'a.pth')
    with pytest.raises(WarmStartError, match='layouts.dinov3'):
        apply_warm_start(Algo(vit(1)), dict(checkpoint=path))


def test_safetensors_missing_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'safetensors.torch', None)
    monkeypatch.setitem(sys.modules, 'safetensors', None)
    path = str(tmp_path / 'model.safetensors')
    with pytest.raises(ImportError, match=r'mmssl\[safetensors\]'):
        apply_warm_start(Algo(vit(1)), dict(checkpoint=path))


def test_bad_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match='Unknown warm_start keys'):
        apply_warm_start(Algo(vit(1)), dict(checkpoint='x', heads=1))
    with pytest.raises(WarmStartError, match='format'):
        apply_warm_start(Algo(vit(1)), dict(checkpoint='x', format='v9'))


def to_hf_in_memory(hf):
    """HF ``Dinov2Model`` file names -> the names transformers 5 gives a
    live model (its conversion mapping): ``attention.{q,k,v,o}_proj``."""
    ren = (
        ('attention.attention.query.', 'attention.q_proj.'),
        ('attention.attention.key.', 'attention.k_proj.'),
        ('attention.attention.value.', 'attention.v_proj.'),
        ('attention.output.dense.', 'attention.o_proj.'),
    )
    out = {}
    for key, value in hf.items():
        for src, dst in ren:
            key = key.replace(src, dst)
        out[key] = value
    return out


@pytest.mark.parametrize('glu', [False, True])
def test_hf_dinov2_in_memory_names(tmp_path, glu):
    """``save_file(Dinov2Model(...).state_dict())`` loads exactly; SwiGLU
    ``weights_in`` is held as ``gate_proj`` (first half) and ``up_proj``."""
    from safetensors.torch import save_file

    src = vit(0, ffn_type='swiglu_fused' if glu else None)
    hub = mmssl_to_dinov2(src.state_dict())
    glu_parts = {}
    if glu:
        for i in range(ARCH['num_layers']):
            b, e = f'blocks.{i}.mlp.', f'encoder.layer.{i}.mlp.'
            for kind in ('weight', 'bias'):
                gate, up = hub.pop(f'{b}w12.{kind}').chunk(2)
                glu_parts[f'{e}gate_proj.{kind}'] = gate
                glu_parts[f'{e}up_proj.{kind}'] = up
                glu_parts[f'{e}down_proj.{kind}'] = hub.pop(f'{b}w3.{kind}')
    hf = {**to_hf_in_memory(to_hf(hub)), **glu_parts}
    assert any('q_proj' in k for k in hf)
    path = str(tmp_path / 'model.safetensors')
    save_file({k: v.contiguous() for k, v in hf.items()}, path)
    assert detect_format(hf) == 'hf_dinov2'
    algo = Algo(vit(1, ffn_type='swiglu_fused' if glu else None))
    report = apply_warm_start(algo, dict(checkpoint=path))
    assert report.missing == [] and report.unexpected == []
    x = torch.randn(2, 3, 32, 32)
    assert torch.allclose(features(algo.backbone, x), features(src, x))


def test_hf_dinov2_block_without_all_parts_is_named():
    from mmssl.checkpoint.layouts.hf_dinov2 import hf_dinov2_to_mmssl

    with pytest.raises(KeyError, match=r'layer\.3\.mlp .*gate, up'):
        hf_dinov2_to_mmssl(
            {'encoder.layer.3.mlp.gate_proj.weight': torch.zeros(4, 2)}
        )


TIMM_DINOV3 = {
    'cls_token': torch.zeros(1, 1, 16),
    'reg_token': torch.zeros(1, 4, 16),
    'patch_embed.proj.weight': torch.zeros(16, 3, 16, 16),
    'blocks.0.gamma_1': torch.zeros(16),
    'blocks.0.attn.qkv.weight': torch.zeros(48, 16),
}


def test_timm_dinov3_is_detected_and_refused_as_timm(tmp_path):
    assert detect_format(TIMM_DINOV3) == 'timm_dinov3'
    path = save(TIMM_DINOV3, tmp_path / 'timm_dinov3.pth')
    with pytest.raises(WarmStartError, match="format='timm_dinov3'"):
        apply_warm_start(Algo(vit(1)), dict(checkpoint=path, format='timm'))
    # another timm RoPE model without pos_embed: named, no KeyError
    other = {k: v for k, v in TIMM_DINOV3.items() if 'gamma' not in k}
    path = save(other, tmp_path / 'eva.pth')
    with pytest.raises(WarmStartError, match='has none'):
        apply_warm_start(Algo(vit(1)), dict(checkpoint=path))


def test_hf_dinov3_rope_theta_must_match_the_backbone(tmp_path):
    import json

    from mmssl.checkpoint.warm_start import hf_dinov3_rope
    from mmssl.models.backbones import DINOv3ViT

    arch = dict(embed_dims=32, num_layers=1, num_heads=2)
    path = str(tmp_path / 'model.safetensors')
    backbone = DINOv3ViT(arch=arch, rope_base=100.0)
    assert hf_dinov3_rope(path, backbone) is None  # no config.json
    cfg = dict(hidden_size=32, num_attention_heads=2, rope_theta=1000.0)
    (tmp_path / 'config.json').write_text(json.dumps(cfg))
    with pytest.raises(WarmStartError, match='rope_base=1000.0'):
        hf_dinov3_rope(path, backbone)
    backbone = DINOv3ViT(arch=arch, rope_base=1000.0)
    periods = hf_dinov3_rope(path, backbone)['rope_embed.periods']
    assert torch.allclose(periods, backbone.rope_embed.periods)
    cfg['rope_theta'] = 0.0
    (tmp_path / 'config.json').write_text(json.dumps(cfg))
    with pytest.raises(WarmStartError, match='positive'):
        hf_dinov3_rope(path, backbone)


def test_mmssl_dinov3_checkpoint_is_mmssl_not_the_hub_layout(tmp_path):
    """An mmssl DINOv3ViT run stores rope_embed.periods, as the hub files
    do; its patch_embed.projection names it mmssl (teacher first)."""
    from mmssl.models.backbones import DINOv3ViT

    def build(seed):
        torch.manual_seed(seed)
        arch = dict(embed_dims=32, num_layers=1, num_heads=2)
        return DINOv3ViT(arch=arch, out_type='raw').eval()

    src = build(0)
    state = {'teacher.backbone.' + k: v for k, v in src.state_dict().items()}
    assert detect_format(state) == 'mmssl'
    path = save({'state_dict': state, 'meta': {}}, tmp_path / 'run.pth')
    algo = Algo(build(1))
    report = apply_warm_start(algo, dict(checkpoint=path))
    assert report.missing == [] and report.unexpected == []
    x = torch.randn(1, 3, 32, 32)
    assert torch.equal(features(algo.backbone, x), features(src, x))
