"""Properties of the state-dict backbone prefix finders.

Key sets are generated with a known layout: a backbone (mmssl ViT key
names) under a prefix built from ``module.`` (DDP), a role (``teacher.``,
``student.``, a momentum encoder, ...) and ``backbone.``, next to heads
and loss buffers. The finder must name that prefix (the teacher's when
there are two backbones) and stripping it must give the backbone's keys
back.
"""

import string

from hypothesis import given
from hypothesis import strategies as st

# The finders, imported in this one place.
from mmssl.checkpoint.state_dict import (
    STUDENT_BACKBONE_PATHS,
    TEACHER_BACKBONE_PATHS,
    backbone_prefixes,
    select_backbone,
)
from mmssl.checkpoint.state_dict import (
    find_backbone_prefix as backbone_prefix,
)

MARKER = 'patch_embed.projection.weight'  # how the ViT converters find it
_TOP = ['cls_token', 'pos_embed', 'mask_token', 'register_tokens']
_TOP += ['patch_embed.projection.bias', 'ln1.weight', 'ln1.bias']
_LAYER = ['ln1.weight', 'attn.qkv.weight', 'attn.proj.bias']
_LAYER += ['ffn.layers.0.0.weight', 'ffn.gamma2.weight', 'ln2.bias']
LAYER_KEYS = st.builds(
    'layers.{}.{}'.format, st.integers(0, 40), st.sampled_from(_LAYER)
)
#: backbone keys without prefix; always with the patch embedding
BACKBONES = st.sets(
    st.sampled_from(_TOP) | LAYER_KEYS, min_size=0, max_size=8
).map(lambda keys: sorted(keys | {MARKER}))
#: keys of other parts, none under a backbone prefix
OTHERS = st.lists(
    st.builds(
        '{}.{}'.format,
        st.sampled_from(['head', 'neck', 'ibot_head', 'dino_loss']),
        st.text(string.ascii_lowercase + '._', min_size=1, max_size=8),
    ),
    max_size=4,
)
WRAPS = st.sampled_from(['', 'module.'])


def _state(prefixes, backbone, others, wrap):
    state = {wrap + o: 0 for o in others}
    for i, prefix in enumerate(prefixes):
        state.update({prefix + k: i + 1 for k in backbone})
    return state


def _strip(keys, prefix):
    return sorted(k[len(prefix) :] for k in keys if k.startswith(prefix))


# ---------------------------------------------------------------- #
# backbone_prefix: known algorithm paths (teacher, target, momentum)
# ---------------------------------------------------------------- #
@given(
    path=st.sampled_from(TEACHER_BACKBONE_PATHS + STUDENT_BACKBONE_PATHS),
    backbone=BACKBONES,
    others=OTHERS,
    wrap=WRAPS,
)
def test_backbone_prefix_of_one_backbone(path, backbone, others, wrap):
    prefix = wrap + path + '.'
    state = _state([prefix], backbone, others, wrap)
    assert backbone_prefix(state.keys()) == prefix
    assert _strip(state, prefix) == backbone
    if path in STUDENT_BACKBONE_PATHS:
        assert backbone_prefix(state.keys(), prefer_teacher=False) == prefix


@given(
    teacher=st.sampled_from(TEACHER_BACKBONE_PATHS),
    student=st.sampled_from(STUDENT_BACKBONE_PATHS),
    backbone=BACKBONES,
    others=OTHERS,
    wrap=WRAPS,
)
def test_backbone_prefix_prefers_the_teacher(
    teacher, student, backbone, others, wrap
):
    t, s = wrap + teacher + '.', wrap + student + '.'
    state = _state([s, t], backbone, others, wrap)
    assert backbone_prefix(state.keys()) == t
    assert backbone_prefix(state.keys(), prefer_teacher=False) == s
    assert _strip(state, t) == backbone


# ---------------------------------------------------------------- #
# backbone_prefixes / select_backbone: any nesting, by the marker
# ---------------------------------------------------------------- #
@st.composite
def layouts(draw):
    """(prefixes, teacher-or-only prefix) of one or two backbones."""
    wrap = draw(WRAPS)
    part = draw(st.sampled_from(['', 'backbone.']))
    if draw(st.booleans()):  # one backbone
        role = draw(st.sampled_from(['', 'teacher.', 'student.']))
        return [wrap + role + part], wrap + role + part
    # teacher and student; a student at the top needs its own name
    student = draw(st.sampled_from(['student.'] + ([''] if part else [])))
    teacher = wrap + 'teacher.' + part
    return [wrap + student + part, teacher], teacher


@given(layout=layouts(), backbone=BACKBONES, others=OTHERS)
def test_find_backbone_prefixes_and_select(layout, backbone, others):
    prefixes, expected = layout
    wrap = 'module.' if expected.startswith('module.') else ''
    bare = expected == wrap  # a bare backbone has no heads next to it
    state = _state(prefixes, backbone, [] if bare else others, wrap)
    found = backbone_prefixes(state, MARKER)
    assert sorted(found) == sorted(prefixes)
    assert found[0] == expected  # the teacher first
    selected = select_backbone(state, marker=MARKER)
    assert sorted(selected) == backbone
    assert set(selected.values()) == {prefixes.index(expected) + 1}
    for prefix in prefixes:
        assert sorted(select_backbone(state, prefix, MARKER)) == backbone
