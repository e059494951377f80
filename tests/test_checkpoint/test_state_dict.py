"""Unwrapping checkpoints, prefixes, and the backbone-prefix finder."""

from collections import OrderedDict

import pytest
import torch

from mmssl.checkpoint import (
    add_prefix,
    backbone_prefixes,
    describe_network,
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
    # BYOL, MoCo v2 / v3, DenseCL: the online network, as their papers
    # evaluate; the momentum encoder only when asked for
    for momentum in ('target_net.module.0.', 'momentum_encoder.module.0.'):
        keys = [momentum + 'a', 'backbone.a']
        assert find_backbone_prefix(keys) == 'backbone.'
        assert find_backbone_prefix(keys, network='momentum') == momentum
    keys = ['encoder_k.module.0.a', 'backbone.a']  # MoCo v2, DenseCL
    assert find_backbone_prefix(keys, network='momentum') == keys[0][:-1]
    assert find_backbone_prefix(['encoder_k.0.a'], network='momentum') == (
        'encoder_k.0.'
    )
    # a file of only a momentum encoder still gives it
    assert find_backbone_prefix(['target_net.0.a']) == 'target_net.0.'
    # CAE's 'teacher' is an EMA copy of the encoder: the paper evaluates
    # the encoder; and it is not mistaken for a DINO teacher's parent
    cae = ['teacher.a', 'backbone.a']
    assert find_backbone_prefix(cae) == 'backbone.'
    assert find_backbone_prefix(cae, network='momentum') == 'teacher.'
    dino = ['teacher.backbone.a', 'teacher.head.b', 'backbone.a']
    with pytest.raises(ValueError, match='has teacher, online'):
        find_backbone_prefix(dino, network='momentum')
    # MMSelfSup / mmpretrain iBOT: teacher = CosineEMA(Sequential(bb, neck))
    ibot = ['teacher.module.0.a', 'teacher.module.1.b', 'backbone.a']
    assert find_backbone_prefix(ibot) == 'teacher.module.0.'
    assert find_backbone_prefix(ibot, network='online') == 'backbone.'
    assert find_backbone_prefix(['backbone.a', 'head.x']) == 'backbone.'
    assert (
        find_backbone_prefix(
            ['teacher.backbone.a', 'backbone.a'], prefer_teacher=False
        )
        == 'backbone.'
    )
    with pytest.raises(ValueError, match='--prefix'):
        find_backbone_prefix(['encoder.a', 'head.b'])
    with pytest.raises(ValueError, match='no momentum encoder.* it has '):
        find_backbone_prefix(['teacher.backbone.a'], network='momentum')
    with pytest.raises(ValueError, match="network='ema'"):
        find_backbone_prefix(['backbone.a'], network='ema')


def test_describe_network_names_the_other_ones():
    byol = ['backbone.a', 'neck.b', 'target_net.module.0.a']
    assert describe_network('backbone.', byol) == (
        'online network `backbone.`; the momentum encoder is '
        '--network momentum'
    )
    assert describe_network('target_net.module.0.', byol) == (
        'momentum encoder `target_net.module.0.`; the online network is '
        '--network online'
    )
    dino = ['module.teacher.backbone.a', 'module.backbone.a']
    assert describe_network('module.teacher.backbone.', dino) == (
        'teacher `module.teacher.backbone.`; the online network is '
        '--network online'
    )
    assert describe_network('', ['a']) == 'backbone (bare backbone keys)'


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
