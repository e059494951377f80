"""Pretrained loading with prefix stripping and the key report."""

import pytest
import torch
from mmengine.model import BaseModule
from torch import nn

from mmssl.checkpoint import UnsafeCheckpointError, load_pretrained

from .payload import save_payload_checkpoint


class TinyBackbone(nn.Module):
    def __init__(self, width: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3)
        self.bn = nn.BatchNorm2d(width)


class TinyAlgo(nn.Module):
    """Stand-in for a whole self-supervised algorithm."""

    def __init__(self, width: int = 4):
        super().__init__()
        self.backbone = TinyBackbone(width)
        self.neck = nn.Linear(width, 2)


class DDPLike(nn.Module):
    """Keys get the ``module.`` prefix exactly as under DDP."""

    def __init__(self, module):
        super().__init__()
        self.module = module


def _randomize(model):
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    return model


def test_ddp_saved_whole_algorithm_into_bare_backbone(tmp_path):
    algo = _randomize(TinyAlgo())
    path = str(tmp_path / 'ddp.pth')
    sd = DDPLike(algo).state_dict()
    assert next(iter(sd)).startswith('module.backbone.')
    torch.save({'meta': {'epoch': 3}, 'state_dict': sd}, path)

    backbone = TinyBackbone()
    report = load_pretrained(backbone, path)
    assert torch.equal(backbone.conv.weight, algo.backbone.conv.weight)
    assert torch.equal(backbone.bn.weight, algo.backbone.bn.weight)
    own = set(backbone.state_dict())
    assert set(report.matched) == own
    assert report.missing == []
    # the DDP prefix is gone before matching
    assert sorted(report.unexpected) == ['neck.bias', 'neck.weight']
    assert report.shape_mismatched == []


def test_strip_never_breaks_a_matching_key(tmp_path):
    """Loading an algorithm checkpoint into the algorithm keeps backbone."""
    src = _randomize(TinyAlgo())
    dst = TinyAlgo()
    report = load_pretrained(dst, {'state_dict': DDPLike(src).state_dict()})
    assert set(report.matched) == set(dst.state_dict())
    assert torch.equal(dst.neck.weight, src.neck.weight)
    assert report.unexpected == []


def test_shape_mismatch_is_skipped_and_reported():
    src = _randomize(TinyAlgo(width=4))
    dst = TinyAlgo(width=4)
    dst.neck = nn.Linear(4, 5)  # a different head
    before = dst.neck.weight.clone()
    report = load_pretrained(dst, src.state_dict(), state_key=None)
    assert ('neck.weight', (2, 4), (5, 4)) in report.shape_mismatched
    assert ('neck.bias', (2,), (5,)) in report.shape_mismatched
    assert torch.equal(dst.neck.weight, before)
    assert torch.equal(dst.backbone.conv.weight, src.backbone.conv.weight)
    assert 'neck.weight' not in report.missing
    assert 'shape mismatch' in report.summary()


def test_prefix_and_state_key_select_teacher():
    """DINO-style file: weights under 'teacher', keys under 'backbone.'."""
    teacher = _randomize(TinyAlgo())
    student = _randomize(TinyAlgo())
    ckpt = {'teacher': teacher.state_dict(), 'student': student.state_dict()}
    backbone = TinyBackbone()
    report = load_pretrained(
        backbone,
        ckpt,
        prefix='backbone.',
        state_key='teacher',
        strip_prefixes=(),
    )
    assert torch.equal(backbone.conv.weight, teacher.backbone.conv.weight)
    assert report.unexpected == []  # neck keys dropped by the prefix
    assert report.missing == []


def test_pretrained_strip_initializer(tmp_path):
    """init_cfg type PretrainedStrip beats the children's own init."""
    algo = _randomize(TinyAlgo())
    path = str(tmp_path / 'algo.pth')
    torch.save({'state_dict': DDPLike(algo).state_dict()}, path)

    class Child(BaseModule):
        def __init__(self):
            super().__init__(
                init_cfg=dict(type='Constant', val=0.0, layer='Conv2d')
            )
            self.conv = nn.Conv2d(3, 4, 3)
            self.bn = nn.BatchNorm2d(4)

    class Parent(BaseModule):
        def __init__(self):
            super().__init__(
                init_cfg=dict(type='PretrainedStrip', checkpoint=path)
            )
            self.backbone = Child()

    model = Parent()
    model.init_weights()
    assert torch.equal(model.backbone.conv.weight, algo.backbone.conv.weight)
    assert torch.equal(model.backbone.bn.weight, algo.backbone.bn.weight)


def test_payload_refused_by_load_pretrained_and_initializer(
    tmp_path, unsafe_local_scheme
):
    marker = tmp_path / 'pwned'
    algo = _randomize(TinyAlgo())
    path = save_payload_checkpoint(
        tmp_path / 'evil.pth', marker, {'state_dict': algo.state_dict()}
    )
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        load_pretrained(TinyAlgo(), path)
    model = BaseModule(init_cfg=dict(type='PretrainedStrip', checkpoint=path))
    model.backbone = TinyBackbone()
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        model.init_weights()
    assert not marker.exists()
    dst = TinyAlgo()
    load_pretrained(dst, path, trusted=True)
    assert marker.exists()
    assert torch.equal(dst.neck.weight, algo.neck.weight)


def _resnet18(init_cfg=None):
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    return MODELS.build(
        dict(
            type='mmpretrain.ResNet',
            depth=18,
            base_channels=8,
            stem_channels=8,
            init_cfg=init_cfg,
        )
    )


def test_what_the_own_init_overwrites_is_reported(tmp_path):
    """mmpretrain's ResNet zeroes each block's last norm after its init
    (zero_init_residual=True), i.e. after PretrainedStrip loaded it: the
    report said matched, so the overwrite is reported, by name."""
    from mmssl.checkpoint import overwritten_after_load

    source = _resnet18()
    with torch.no_grad():
        for p in source.parameters():
            p.normal_()
    path = str(tmp_path / 'r18.pth')
    torch.save(dict(state_dict=source.state_dict()), path)
    model = _resnet18(dict(type='PretrainedStrip', checkpoint=path))
    model.init_weights()
    state = model.state_dict()
    zeroed = [k for k in state if k.endswith(('bn2.weight', 'bn2.bias'))]
    assert len(zeroed) == 16 and not any(state[k].any() for k in zeroed)
    lines = overwritten_after_load(model)
    assert len(lines) == 1
    # 8 BasicBlocks x norm2.{weight, bias}
    assert lines[0].startswith('PretrainedStrip: 16 of the ')
    assert 'layer1.0.bn2.weight' in lines[0]
    assert 'zero_init_residual=False' in lines[0]
    assert overwritten_after_load(model) == []  # reported once
    # nothing changed afterwards: nothing to report
    kept = _resnet18(dict(type='PretrainedStrip', checkpoint=path))
    kept.zero_init_residual = False
    kept.init_weights()
    assert overwritten_after_load(kept) == []
