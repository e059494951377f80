"""Unwrapping checkpoints, prefixes, and the backbone-prefix finder."""

from collections import OrderedDict

import pytest
import torch

from mmssl.checkpoint import (
    add_prefix,
    backbone_prefixes,
    find_backbone_prefix,
    select_backbone,
    strip_prefix,
    unwrap_state_dict,
)

W = torch.ones(2)
B = torch.zeros(1)


@pytest.mark.parametrize(
    'ckpt',
    [
        {'a.w': W, 'a.b': B},  # bare state dict
        {'meta': {'epoch': 1}, 'state_dict': {'a.w': W, 'a.b': B}},
        {'model': {'a.w': W, 'a.b': B}, 'optimizer': {}, 'iteration': 9},
        {'teacher': {'a.w': W, 'a.b': B}},  # teacher_checkpoint.pth
        {'state_dict': {'model': {'module.a.w': W, 'module.a.b': B}}},
        {'module': {'a.w': W, 'a.b': B, 'step': 3}},  # non-tensor dropped
    ],
    ids=['bare', 'mmengine', 'dinov2_train', 'teacher', 'nested_ddp', 'mod'],
)
def test_unwrap_finds_the_weights(ckpt):
    out = unwrap_state_dict(ckpt)
    assert list(out) == ['a.w', 'a.b']
    assert out['a.w'] is W and out['a.b'] is B


def test_unwrap_keeps_module_prefix_unless_on_every_key():
    sd = OrderedDict([('module.a', W), ('b', B)])
    assert list(unwrap_state_dict(sd)) == ['module.a', 'b']


def test_unwrap_explicit_state_key():
    ckpt = {'teacher': {'x': W}, 'student': {'x': B}}
    assert unwrap_state_dict(ckpt, 'student')['x'] is B
    nested = {'a': {'b': {'x': W}}}
    assert unwrap_state_dict(nested, 'a.b')['x'] is W
    with pytest.raises(KeyError, match=r"no 'ema'.*'teacher', 'student'"):
        unwrap_state_dict(ckpt, 'ema')
    with pytest.raises(TypeError, match='state_key'):
        unwrap_state_dict({'state_dict': [W]}, 'state_dict')
    # None: the dict itself, no descent
    assert unwrap_state_dict({'state_dict': {'x': W}, 'y': B}, None) == {
        'y': B
    }


def test_strip_and_add_prefix():
    sd = OrderedDict([('backbone.a', W), ('neck.b', B), ('backbone.c', B)])
    assert list(strip_prefix(sd, 'backbone.').items()) == [
        ('a', W),
        ('c', B),
    ]
    assert strip_prefix(sd, '') == sd
    both = add_prefix({'a': W}, ('backbone.', 'teacher.backbone.'))
    assert list(both) == ['backbone.a', 'teacher.backbone.a']
    assert both['teacher.backbone.a'] is W


def test_backbone_prefix_rules():
    assert (
        find_backbone_prefix(['backbone.a', 'teacher.backbone.a', 'neck.b'])
        == 'teacher.backbone.'
    )
    assert (
        find_backbone_prefix(['backbone.a', 'target_net.module.0.a'])
        == 'target_net.module.0.'
    )
    assert (
        find_backbone_prefix(['momentum_encoder.module.0.a', 'backbone.a'])
        == 'momentum_encoder.module.0.'
    )
    assert find_backbone_prefix(['backbone.a', 'head.x']) == 'backbone.'
    assert (
        find_backbone_prefix(
            ['teacher.backbone.a', 'backbone.a'], prefer_teacher=False
        )
        == 'backbone.'
    )
    with pytest.raises(ValueError, match='--prefix'):
        find_backbone_prefix(['encoder.a', 'head.b'])


def test_backbone_prefixes_by_marker():
    m = 'patch_embed.proj.weight'
    keys = [
        'student.backbone.' + m,
        'teacher.backbone.' + m,
        'teacher.backbone.blocks.0.x',
        'ema_teacher.' + m,
        'enc.' + m,
        'xpatch_embed.proj.weight',  # not a whole component: ignored
    ]
    assert backbone_prefixes(keys, marker=m) == [
        'teacher.backbone.',
        'student.backbone.',
        'ema_teacher.',
        'enc.',
    ]
    assert backbone_prefixes(keys, marker=m, prefer_teacher=False)[:2] == [
        'student.backbone.',
        'teacher.backbone.',
    ]
    assert find_backbone_prefix([m, 'head.w'], marker=m) == ''  # bare
    with pytest.raises(ValueError, match=f"ends with '{m}'"):
        find_backbone_prefix(['backbone.x'], marker=m)


def test_select_backbone():
    m = 'patch_embed.projection.weight'
    sd = {'backbone.' + m: W, 'teacher.backbone.' + m: B, 'neck.x': W}
    teacher = select_backbone(sd, marker=m)  # teacher first
    assert list(teacher) == [m] and teacher[m] is B
    student = select_backbone(sd, 'backbone.', marker=m)
    assert list(student) == [m] and student[m] is W
    with pytest.raises(ValueError, match=r"under prefix 'neck\.'"):
        select_backbone(sd, 'neck.', marker=m)
    with pytest.raises(ValueError, match='--prefix'):
        select_backbone({'x': W}, marker=m)
