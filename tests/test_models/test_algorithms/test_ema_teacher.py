"""EMATeacherSelfSupervisor: teacher copies, Gram teacher start, features."""

import pytest
import torch

from mmssl.registry import MODELS

K = 8


def _cfg(gram=True, **kw):
    terms = dict(dino_cls=dict(type='DINOLoss', out_dim=K))
    if gram:
        terms['gram'] = dict(type='GramLoss')
    return dict(
        type='DINOFamily',
        backbone=dict(
            type='DINOVisionTransformer',
            arch=dict(
                embed_dims=16,
                num_layers=1,
                num_heads=2,
                feedforward_channels=16,
            ),
            img_size=16,
            patch_size=8,
            out_type='raw',
        ),
        head=dict(
            type='DINOHead',
            in_channels=16,
            n_prototypes=K,
            hidden_channels=16,
            bottleneck_channels=8,
        ),
        terms=terms,
        **kw,
    )


def _build(seed, **kw):
    torch.manual_seed(seed)
    model = MODELS.build(_cfg(**kw))
    model.init_weights()
    return model


def _same(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        torch.equal(sa[k], sb[k]) for k in sa
    )


def _perturb(module, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=gen))


def test_gram_teacher_starts_from_the_warm_started_teacher(tmp_path):
    src = _build(0, gram=False)
    _perturb(src.backbone, 1)
    # 'auto' reads the teacher backbone of the file into student + teacher;
    # the Gram teacher must be that backbone too, not the random init
    src.teacher['backbone'].load_state_dict(src.backbone.state_dict())
    path = str(tmp_path / 'backbone.pth')
    torch.save({'state_dict': src.state_dict()}, path)
    model = _build(2, warm_start=dict(checkpoint=path))
    assert _same(model.teacher['backbone'], src.backbone)
    assert _same(model.gram_teacher, src.backbone)
    # the update counter is an exact integer in checkpoints
    counter = model.state_dict()['gram_teacher_updates']
    assert counter.dtype == torch.long and counter.shape == ()
    assert int(counter) == 0


def test_full_warm_start_keeps_the_gram_teacher_of_the_file(tmp_path):
    prev = _build(0)
    for seed, module in enumerate(
        [prev.backbone, prev.teacher['backbone'], prev.gram_teacher]
    ):
        _perturb(module, seed + 1)  # three different backbones
    prev.gram_teacher_updates += 3
    path = str(tmp_path / 'stage1.pth')
    torch.save({'state_dict': prev.state_dict()}, path)
    model = _build(2, warm_start=dict(checkpoint=path, format='mmssl_full'))
    assert _same(model, prev)
    assert not _same(model.gram_teacher, model.teacher['backbone'])
    # without a warm start the Gram teacher is the (initialised) teacher
    fresh = _build(2)
    assert _same(fresh.gram_teacher, fresh.teacher['backbone'])
    assert not _same(fresh.gram_teacher, model.gram_teacher)


def test_extract_feat_uses_the_first_view_and_the_teacher():
    model = _build(0, gram=False)
    _perturb(model.backbone, 3)  # student != teacher
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(2, 3, 16, 16, generator=gen) for _ in range(2))
    with torch.no_grad():
        want = model.teacher['backbone'](a)[-1][:, 0]
    assert torch.equal(model.extract_feat([a, b]), want)
    assert torch.equal(model.extract_feat((a,)), want)
    assert torch.equal(model.extract_feat(a), want)


def test_update_gram_teacher_without_a_gram_term_names_the_class():
    model = MODELS.build(_cfg(gram=False))
    assert not hasattr(model, 'gram_teacher')
    with pytest.raises(AttributeError, match='^DINOFamily has no Gram teach'):
        model.update_gram_teacher()


def test_ema_with_a_device_skip_flag(monkeypatch):
    """Flag 0: the plain EMA (float32 rounding of m); flag 1: no change.
    Small chunks cover the chunked scaled-student temporaries."""
    import mmssl.models.algorithms.ema_teacher as ema

    monkeypatch.setattr(ema, '_EMA_CHUNK', 300)
    plain, flagged = _build(0, gram=False), _build(0, gram=False)
    for model in (plain, flagged):
        with torch.no_grad():
            for p in model.teacher.parameters():
                p.mul_(0.5).add_(1.0)  # teacher != student
    plain.update_teacher(0.9)
    flagged.update_teacher(0.9, skip=torch.zeros(()))
    for a, b in zip(plain.teacher.parameters(), flagged.teacher.parameters()):
        torch.testing.assert_close(a, b)
    before = [p.clone() for p in flagged.teacher.parameters()]
    flagged.update_teacher(0.9, skip=torch.ones(()))
    assert all(
        torch.equal(a, b) for a, b in zip(before, flagged.teacher.parameters())
    )
    sizes = [[p.numel() for p in t] for t, _ in ema._chunks(before, before)]
    assert sum(sizes, []) == [p.numel() for p in before]
    assert all(sum(s) <= 300 or len(s) == 1 for s in sizes)


def test_gram_start_flag_follows_snapshots_and_loads():
    """The step reads the Gram count from the device once, not per step;
    a snapshot or a loaded state dict updates what it knows."""
    model, other = _build(0), _build(1)
    assert model._gram_started() is False
    model.gram_teacher_updates.fill_(5)  # not seen: no read per step
    assert model._gram_started() is False
    model.update_gram_teacher()
    assert model._gram_started() is True
    other.load_state_dict(model.state_dict())  # e.g. a resume
    assert other._gram_started() is True
    model.load_state_dict(_build(2).state_dict())
    assert model._gram_started() is False
