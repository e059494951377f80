"""The evaluation loader: any warm-start format, teacher first, and a
refusal (one line: what matched, which config) below 95 %."""

import pytest
import torch

from mmssl.checkpoint.layouts.dinov2 import mmssl_to_dinov2
from mmssl.checkpoint.layouts.timm import mmssl_to_timm
from mmssl.evaluation.load_backbone import (
    BackboneMismatchError,
    load_backbone_weights,
)
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules


def _vit(width=32, seed=0, patch=8):
    register_all_modules()
    torch.manual_seed(seed)
    arch = dict(
        embed_dims=width, num_layers=2, num_heads=2,
        feedforward_channels=2 * width,
    )  # fmt: skip
    model = MODELS.build(
        dict(
            type='DINOVisionTransformer',
            arch=arch,
            img_size=32,
            patch_size=patch,
            out_type='raw',
        )
    )
    model.init_weights()
    return model


def _same(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize('layout', ['teacher', 'dinov2', 'timm'])
def test_loads_every_layout_into_a_bare_backbone(tmp_path, layout):
    source, student = _vit(seed=1), _vit(seed=2)
    sd = source.state_dict()
    if layout == 'teacher':  # an mmssl training file: the teacher wins
        state = {f'teacher.backbone.{k}': v for k, v in sd.items()}
        state.update(
            {f'backbone.{k}': v for k, v in student.state_dict().items()}
        )
        state = dict(state_dict=state)
    elif layout == 'dinov2':
        state = mmssl_to_dinov2(sd)
    else:
        state = mmssl_to_timm(sd)
    path = str(tmp_path / 'w.pth')
    torch.save(state, path)
    target = _vit(seed=3)
    loaded = load_backbone_weights(target, path)
    assert _same(target, source)
    # timm drops DINOv2's mask_token: 34 of 35 tensors
    assert loaded.share == (34 / 35 if layout == 'timm' else 1.0)
    assert 'teacher.backbone.' in loaded.source or layout != 'teacher'


def test_other_architecture_is_refused_in_one_line(tmp_path):
    other = _vit(width=48)
    state = {f'teacher.backbone.{k}': v for k, v in other.state_dict().items()}
    meta = dict(
        experiment_name='dinov2_vit-tiny-p4_1xb64-10e_demo_20261127_101010'
    )
    path = str(tmp_path / 'w.pth')
    torch.save(dict(state_dict=state, meta=meta), path)
    target = _vit(width=32)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    with pytest.raises(BackboneMismatchError) as err:
        load_backbone_weights(target, path, config='CFG.py')
    msg = str(err.value)
    assert '\n' not in msg
    assert 'does not hold the backbone of CFG.py' in msg
    assert 'teacher `teacher.backbone.`' in msg  # the network, named
    assert 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py' in msg
    assert all(
        torch.equal(before[k], v) for k, v in target.state_dict().items()
    )
    # without a config name in the file: the shape of its ViT
    torch.save(state, path)
    with pytest.raises(
        BackboneMismatchError, match='width 48, patch 8, 2 blocks'
    ):
        load_backbone_weights(target, path)


def test_every_backbone_copy_gets_the_teacher(tmp_path):
    class Algo(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = _vit(seed=4)
            self.teacher = torch.nn.ModuleDict(
                dict(backbone=_vit(seed=5), head=torch.nn.Linear(2, 2))
            )

    source = Algo()
    path = str(tmp_path / 'w.pth')
    torch.save(dict(state_dict=source.state_dict()), path)
    target = Algo()
    loaded = load_backbone_weights(target, path)
    assert loaded.whole and loaded.copies == ['teacher.backbone', 'backbone']
    assert _same(target.backbone, source.teacher['backbone'])
    assert _same(target.teacher['backbone'], source.teacher['backbone'])
    assert torch.equal(
        target.teacher['head'].weight, source.teacher['head'].weight
    )


def test_hivit_keys_that_look_like_dinov2_load_as_stored(tmp_path):
    """HiViT (iTPN) names its stem ``patch_embed.proj`` like the DINOv2
    hub layout; its training file loads as stored, not converted."""
    register_all_modules()

    def hivit(seed):
        torch.manual_seed(seed)
        arch = dict(embed_dims=24, depths=[1, 1, 2], num_heads=2)
        return MODELS.build(
            dict(
                type='iTPNHiViT',
                arch=arch,
                img_size=32,
                patch_size=8,
                inner_patches=4,
                out_indices=[5],
            )
        )

    source = hivit(1)
    state = {f'backbone.{k}': v for k, v in source.state_dict().items()}
    state['neck.decoder_embed.weight'] = torch.zeros(4, 24)
    path = str(tmp_path / 'epoch_1.pth')
    torch.save(dict(state_dict=state), path)
    target = hivit(2)
    loaded = load_backbone_weights(target, path)
    assert _same(target, source) and loaded.share == 1.0


def _demo_model(config: str):
    import copy

    from mmssl.config import load_config
    from mmssl.config.derived_sizes import resolve_model_sizes

    register_all_modules()
    cfg = load_config(f'configs/{config}')
    model = MODELS.build(resolve_model_sizes(copy.deepcopy(cfg.model)))
    model.init_weights()
    return model


#: demo config, the network evaluated by default (its paper's), where
#: the momentum / teacher backbone lives in the model
NETWORK_OF = [
    ('byol/byol_resnet18-w16_1xb64-4e_demo.py', 'online', 'target_net'),
    ('mocov2/mocov2_resnet18-w16_1xb64-4e_demo.py', 'online', 'encoder_k'),
    (
        'mocov3/mocov3_resnet18-w16_1xb64-4e_demo.py',
        'online',
        'momentum_encoder',
    ),
    ('dino/dino_resnet18-w16_1xb64-4e_demo.py', 'teacher', 'teacher'),
]


@pytest.mark.parametrize('config, default, other', NETWORK_OF)
def test_the_evaluated_network_is_the_papers_and_named(
    config, default, other, tmp_path
):
    trained = _demo_model(config)
    online = trained.backbone
    twin = getattr(trained, other)
    twin = twin['backbone'] if other == 'teacher' else twin.module[0]
    with torch.no_grad():  # the two networks differ, as after training
        for p in twin.parameters():
            p.add_(1.0)
    path = str(tmp_path / 'ckpt.pth')
    torch.save(dict(state_dict=trained.state_dict()), path)
    want = twin if default == 'teacher' else online
    alt = 'online' if default == 'teacher' else 'momentum'
    unwanted = online if want is twin else twin
    for network, source in ((None, want), (alt, unwanted)):
        fresh = _demo_model(config)
        loaded = load_backbone_weights(fresh, path, network=network)
        name = network or default
        words = dict(online='online network', teacher='teacher',
                     momentum='momentum encoder')[name]  # fmt: skip
        assert loaded.source.startswith(words + ' `'), loaded.source
        # every copy holds the chosen network's weights
        for copy_path in loaded.copies:
            assert _same(fresh.get_submodule(copy_path), source), copy_path
    assert (
        f'is --network {alt}'
        in load_backbone_weights(_demo_model(config), path).summary()
    )
