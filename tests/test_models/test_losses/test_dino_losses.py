"""DINO / iBOT / KoLeo losses against naive loop implementations."""

import math

import pytest
import torch

from mmssl.models.losses import (
    DINOLoss,
    KoLeoLoss,
    iBOTPatchLoss,
    sinkhorn_knopp,
)


def _log_softmax(v, temp):
    m = max(x / temp for x in v)
    lse = m + math.log(sum(math.exp(x / temp - m) for x in v))
    return [x / temp - lse for x in v]


def _softmax(v, temp):
    m = max(x / temp for x in v)
    e = [math.exp(x / temp - m) for x in v]
    return [x / sum(e) for x in e]


def _naive_dino(student, teacher, t_temp, s_temp, center):
    """Loop version of DINO's loss (paper Eq. 3, mean over view pairs)."""
    num_v, batch, k = student.shape
    num_g = teacher.shape[0]
    total, pairs = 0.0, 0
    for t in range(num_g):
        for s in range(num_v):
            if s == t:
                continue
            ce = 0.0
            for b in range(batch):
                q = _softmax(
                    [teacher[t, b, i].item() - center[i] for i in range(k)],
                    t_temp,
                )
                logp = _log_softmax(student[s, b].tolist(), s_temp)
                ce += -sum(q[i] * logp[i] for i in range(k))
            total += ce / batch
            pairs += 1
    return total / pairs


def _naive_sinkhorn(logits, temp, iters):
    """SwAV/DINOv2 Sinkhorn-Knopp written out with python loops."""
    batch, k = len(logits), len(logits[0])
    q = [
        [math.exp(logits[b][i] / temp) for b in range(batch)] for i in range(k)
    ]  # K x B
    total = sum(sum(r) for r in q)
    q = [[x / total for x in r] for r in q]
    for _ in range(iters):
        for i in range(k):
            rs = sum(q[i])
            q[i] = [x / rs / k for x in q[i]]
        for b in range(batch):
            cs = sum(q[i][b] for i in range(k))
            for i in range(k):
                q[i][b] = q[i][b] / cs / batch
    return [[q[i][b] * batch for i in range(k)] for b in range(batch)]


@pytest.mark.parametrize('num_v', [2, 5])
def test_dino_loss_matches_naive_and_updates_center(num_v):
    torch.manual_seed(0)
    g, b, k = 2, 3, 7
    student = torch.randn(num_v, b, k)
    teacher = torch.randn(g, b, k)
    loss_fn = DINOLoss(out_dim=k, student_temp=0.1, center_momentum=0.9)
    center0 = [0.0] * k
    loss = loss_fn(student, teacher, teacher_temp=0.04)
    expected = _naive_dino(student, teacher, 0.04, 0.1, center0)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    # centre = 0.9 * 0 + 0.1 * mean of all teacher rows
    exp_center = 0.1 * teacher.reshape(-1, k).mean(0)
    torch.testing.assert_close(loss_fn.center[0], exp_center)
    # second call uses the updated centre
    center1 = loss_fn.center[0].tolist()
    loss2 = loss_fn(student, teacher, teacher_temp=0.07)
    assert loss2.item() == pytest.approx(
        _naive_dino(student, teacher, 0.07, 0.1, center1), rel=1e-5
    )
    assert 'center' in loss_fn.state_dict()


def test_dino_loss_sinkhorn_matches_naive():
    torch.manual_seed(1)
    g, b, k = 2, 4, 6
    student = torch.randn(3, b, k)
    teacher = torch.randn(g, b, k)
    loss_fn = DINOLoss(out_dim=k, centering='sinkhorn_knopp', sk_iters=3)
    loss = loss_fn(student, teacher, teacher_temp=0.5)
    q = _naive_sinkhorn(teacher.reshape(-1, k).tolist(), 0.5, 3)
    q = torch.tensor(q).view(g, b, k)
    logp = torch.log_softmax(student / 0.1, -1)
    total, n = 0.0, 0
    for t in range(g):
        for s in range(3):
            if s != t:
                total += -(q[t] * logp[s]).sum(-1).mean().item()
                n += 1
    assert loss.item() == pytest.approx(total / n, rel=1e-5)
    # centre is not touched in SK mode
    assert torch.count_nonzero(loss_fn.center) == 0


def test_sinkhorn_marginals():
    torch.manual_seed(2)
    b, k = 8, 4
    logits = torch.randn(b, k)
    q = sinkhorn_knopp(logits, teacher_temp=1.0, num_iters=3)
    torch.testing.assert_close(q.sum(1), torch.ones(b))  # each sample
    naive = torch.tensor(_naive_sinkhorn(logits.tolist(), 1.0, 3))
    torch.testing.assert_close(q, naive, rtol=1e-5, atol=1e-6)
    q50 = sinkhorn_knopp(logits, teacher_temp=1.0, num_iters=50)
    # prototypes equally used: column sums B / K
    torch.testing.assert_close(
        q50.sum(0), torch.full((k,), b / k), rtol=1e-3, atol=1e-3
    )
    # logits in [3, 4] at T=0.04 overflow a plain exp (e^100); the global
    # max is subtracted first, which leaves the result unchanged
    big = 3.5 + 0.5 * torch.tanh(logits)
    q_big = sinkhorn_knopp(big, teacher_temp=0.04)
    assert torch.isfinite(q_big).all()
    torch.testing.assert_close(
        q_big, sinkhorn_knopp(big - 3.5, teacher_temp=0.04)
    )


def test_dino_loss_errors():
    loss_fn = DINOLoss(out_dim=4)
    with pytest.raises(ValueError, match='prototypes'):
        loss_fn(torch.randn(2, 2, 5), torch.randn(2, 2, 5), 0.04)
    with pytest.raises(ValueError, match='must be'):
        loss_fn(torch.randn(2, 3, 4), torch.randn(2, 2, 4), 0.04)
    with pytest.raises(ValueError, match='centering'):
        DINOLoss(out_dim=4, centering='bad')


@pytest.mark.parametrize('average_over', ['all_images', 'masked_images'])
def test_ibot_patch_loss_matches_naive(average_over):
    torch.manual_seed(3)
    n_img, p, k = 3, 5, 6
    masks = torch.zeros(n_img, p, dtype=torch.bool)
    masks[0, [0, 2]] = True
    masks[2, [1, 3, 4]] = True  # image 1 unmasked
    m = int(masks.sum())
    student = torch.randn(m, k)
    teacher = torch.randn(m, k)
    loss_fn = iBOTPatchLoss(out_dim=k, average_over=average_over)
    loss = loss_fn(student, teacher, masks, teacher_temp=0.07)
    row, total = 0, 0.0
    for i in range(n_img):
        n_i = int(masks[i].sum())
        img = 0.0
        for j in range(p):
            if masks[i, j]:
                q = _softmax(teacher[row].tolist(), 0.07)
                logp = _log_softmax(student[row].tolist(), 0.1)
                img += -sum(a * c for a, c in zip(q, logp))
                row += 1
        if n_i:
            total += img / n_i
    denom = n_img if average_over == 'all_images' else 2
    assert loss.item() == pytest.approx(total / denom, rel=1e-5)
    torch.testing.assert_close(loss_fn.center[0], 0.1 * teacher.mean(0))


def test_ibot_patch_loss_no_masks_and_shape_error():
    loss_fn = iBOTPatchLoss(out_dim=4, centering='sinkhorn_knopp')
    s = torch.randn(0, 4, requires_grad=True)
    loss = loss_fn(
        s, torch.randn(0, 4), torch.zeros(2, 3, dtype=torch.bool), 0.04
    )
    assert loss.item() == 0.0
    loss.backward()
    with pytest.raises(ValueError, match='masked-patch rows'):
        loss_fn(
            torch.randn(2, 4),
            torch.randn(2, 4),
            torch.ones(1, 3, dtype=torch.bool),
            0.04,
        )


def test_koleo_matches_naive_and_batch_one():
    torch.manual_seed(4)
    x = torch.randn(5, 3)
    loss = KoLeoLoss()(x)
    xn = [v / v.norm() for v in x]
    expected = 0.0
    for i in range(5):
        d = min((xn[i] - xn[j]).norm().item() for j in range(5) if j != i)
        expected += -math.log(d + 1e-8)
    assert loss.item() == pytest.approx(expected / 5, rel=1e-4)
    # batch 2: both points are each other's neighbour
    x2 = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    assert KoLeoLoss()(x2).item() == pytest.approx(
        -math.log(math.sqrt(2)), rel=1e-5
    )
    # batch 1: defined as 0, finite, differentiable
    x1 = torch.randn(1, 3, requires_grad=True)
    l1 = KoLeoLoss()(x1)
    assert l1.item() == 0.0
    l1.backward()
    assert torch.equal(x1.grad, torch.zeros_like(x1))
    # duplicate samples stay finite
    assert torch.isfinite(KoLeoLoss()(torch.ones(3, 4)))


# ---------------------------------------------------------------------------
# Added to kill the mutants that survived .dev_scripts/mutation_test.py; each
# one is listed in docs/dev/mutation_testing.md.


def _naive_dino_sk(student, teacher, t_temp, s_temp, iters):
    """DINO loss with Sinkhorn-Knopp targets, from the loop versions."""
    num_g, batch, k = teacher.shape
    q = _naive_sinkhorn(teacher.reshape(-1, k).tolist(), t_temp, iters)
    total, pairs = 0.0, 0
    for t in range(num_g):
        for s in range(student.shape[0]):
            if s == t:
                continue
            for b in range(batch):
                logp = _log_softmax(student[s, b].tolist(), s_temp)
                qt = q[t * batch + b]
                total += -sum(qt[i] * logp[i] for i in range(k)) / batch
            pairs += 1
    return total / pairs


def _naive_ibot(student, teacher, masks, t_temp, s_temp, average_over):
    """iBOT patch loss (first call, centre 0): per-image mean over masked
    patches, then the mean over images (all, or those with a masked patch).
    """
    row, total, masked_images = 0, 0.0, 0
    for i in range(masks.shape[0]):
        n_i = int(masks[i].sum())
        img = 0.0
        for _ in range(n_i):
            q = _softmax(teacher[row].tolist(), t_temp)
            logp = _log_softmax(student[row].tolist(), s_temp)
            img += -sum(a * c for a, c in zip(q, logp))
            row += 1
        if n_i:
            total += img / n_i
            masked_images += 1
    denom = masks.shape[0] if average_over == 'all_images' else masked_images
    return total / denom


def _koleo_reference(x, eps=1e-8):
    """DINOv2's KoLeo in float64 loops: eps bounds the norm from below, is
    added to every coordinate difference (torch's pairwise distance) and
    to the distance inside the log."""
    rows = x.double().tolist()
    unit = []
    for r in rows:
        norm = math.sqrt(sum(v * v for v in r))
        unit.append([v / max(norm, eps) for v in r])
    total = 0.0
    for i, u in enumerate(unit):
        dots = [
            -math.inf if j == i else sum(a * b for a, b in zip(u, w))
            for j, w in enumerate(unit)
        ]
        w = unit[dots.index(max(dots))]
        d = math.sqrt(sum((a - b + eps) ** 2 for a, b in zip(u, w)))
        total += -math.log(d + eps)
    return total / len(unit)


def _run_as_ranks(monkeypatch, fn, shards):
    """Run ``fn(shard)`` on one thread per shard, as ranks of one group:
    ``all_reduce`` in centering.py is replaced by a barrier that reduces
    the threads' tensors as torch.distributed would (mmengine's op names;
    anything else raises, as it does on a real multi-rank group)."""
    import threading

    import mmssl.models.losses.centering as centering_module

    n = len(shards)
    barrier = threading.Barrier(n, timeout=30)
    slots, local, results, errors = [None] * n, threading.local(), {}, []
    ops = dict(
        sum=lambda ts: torch.stack(ts).sum(0),
        max=lambda ts: torch.stack(ts).amax(0),
    )

    def fake_all_reduce(data, op='sum', group=None):
        if not isinstance(data, torch.Tensor) or op.lower() not in ops:
            raise ValueError(f'bad all_reduce({type(data)}, op={op!r})')
        slots[local.rank] = data.clone()
        barrier.wait()
        result = ops[op.lower()](slots)
        barrier.wait()  # every rank has read the slots
        data.copy_(result)

    def run(rank):
        local.rank = rank
        try:
            results[rank] = fn(shards[rank])
        except BaseException as e:  # re-raised below
            errors.append(e)
            barrier.abort()

    monkeypatch.setattr(centering_module, 'all_reduce', fake_all_reduce)
    threads = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    return [results[r] for r in range(n)]


def test_sinkhorn_and_centre_on_two_ranks_equal_one_process(monkeypatch):
    torch.manual_seed(6)
    logits = torch.randn(8, 5) * 3
    whole = sinkhorn_knopp(logits, 0.1)  # one process, all rows
    for cut in (5, 0):  # uneven ranks, and a rank without rows
        out = _run_as_ranks(
            monkeypatch,
            lambda x: sinkhorn_knopp(x, 0.1),
            [logits[:cut], logits[cut:]],
        )
        torch.testing.assert_close(torch.cat(out), whole)

    def centre(x):
        loss = DINOLoss(out_dim=5)
        loss.update_center(x)
        return loss.center[0]

    for c in _run_as_ranks(monkeypatch, centre, [logits[:5], logits[5:]]):
        torch.testing.assert_close(c, 0.1 * logits.mean(0))


def test_sinkhorn_default_and_one_iteration_match_loops():
    torch.manual_seed(7)
    logits = torch.randn(6, 4)
    for iters in (1, 3):
        naive = torch.tensor(_naive_sinkhorn(logits.tolist(), 0.5, iters))
        torch.testing.assert_close(
            sinkhorn_knopp(logits, 0.5, num_iters=iters), naive
        )
    with pytest.raises(ValueError, match='num_iters must be >= 1, got 0'):
        sinkhorn_knopp(logits, 0.5, num_iters=0)
    naive3 = torch.tensor(_naive_sinkhorn(logits.tolist(), 0.5, 3))
    torch.testing.assert_close(sinkhorn_knopp(logits, 0.5), naive3)


def test_teacher_centering_defaults_and_centre_edge_cases():
    from mmssl.models.losses import TeacherCentering

    torch.manual_seed(8)
    x = torch.randn(4, 3)
    tc = TeacherCentering(3)  # defaults: 'centering', momentum 0.9
    torch.testing.assert_close(
        tc.teacher_targets(x, 0.5), (x / 0.5).softmax(1)
    )
    torch.testing.assert_close(tc.center[0], 0.1 * x.mean(0))
    sk = TeacherCentering(3, centering='sinkhorn_knopp')  # 3 iterations
    naive = torch.tensor(_naive_sinkhorn(x.tolist(), 0.5, 3))
    torch.testing.assert_close(sk.teacher_targets(x, 0.5), naive)
    cfg = dict(type='Constant', val=0.0)
    assert TeacherCentering(3, init_cfg=cfg).init_cfg == cfg
    # no rows: the centre stays; one row: the centre moves towards it
    fresh = TeacherCentering(3)
    fresh.update_center(torch.zeros(0, 3))
    assert torch.equal(fresh.center, torch.zeros(1, 3))
    fresh.update_center(x[:1])
    torch.testing.assert_close(fresh.center[0], 0.1 * x[0])


def test_dino_loss_defaults_one_pair_and_messages():
    assert DINOLoss().center.shape == (1, 65536)  # DINOv2's prototypes
    cfg = dict(type='Constant', val=0.0)
    assert DINOLoss(out_dim=4, init_cfg=cfg).init_cfg == cfg
    torch.manual_seed(9)
    k = 5
    student, teacher = torch.randn(2, 3, k), torch.randn(1, 3, k)
    # one global and one local student view: a single pair; momentum 0.9
    loss_fn = DINOLoss(out_dim=k)
    assert loss_fn(student, teacher, 0.04).item() == pytest.approx(
        _naive_dino(student, teacher, 0.04, 0.1, [0.0] * k), rel=1e-5
    )
    torch.testing.assert_close(loss_fn.center[0], 0.1 * teacher[0].mean(0))
    # Sinkhorn-Knopp: 3 iterations by default, sk_iters otherwise
    teacher2 = torch.randn(2, 3, k)
    for kwargs, iters in ((dict(), 3), (dict(sk_iters=1), 1)):
        sk = DINOLoss(out_dim=k, centering='sinkhorn_knopp', **kwargs)
        assert sk(student, teacher2, 0.5).item() == pytest.approx(
            _naive_dino_sk(student, teacher2, 0.5, 0.1, iters), rel=1e-5
        )
    with pytest.raises(ValueError, match=r'must be \(V >= 2, 3, 5\)'):
        loss_fn(student[:1], teacher2, 0.04)  # fewer student views
    with pytest.raises(
        ValueError,
        match=r'^DINOLoss needs at least two views \(one global and '
        r'another global or local one\)\.$',
    ):
        loss_fn(student[:1], teacher, 0.04)
    with pytest.raises(
        ValueError,
        match=r'^Teacher logits have 5 prototypes but the loss was built '
        r'with out_dim=4\.$',
    ):
        DINOLoss(out_dim=4)(torch.randn(2, 3, 5), torch.randn(2, 3, 5), 0.1)


@pytest.mark.parametrize('average_over', ['all_images', 'masked_images'])
def test_ibot_patch_loss_single_patches_and_single_image(average_over):
    torch.manual_seed(10)
    k = 4
    layouts = [
        [[1, 0, 0], [0, 0, 0], [1, 1, 0]],  # an image with one patch
        [[0, 0, 0], [0, 1, 0]],  # one masked image
        [[1, 1, 0]],  # one image
    ]
    for layout in layouts:
        masks = torch.tensor(layout, dtype=torch.bool)
        m = int(masks.sum())
        student, teacher = torch.randn(m, k), torch.randn(m, k)
        loss = iBOTPatchLoss(out_dim=k, average_over=average_over)(
            student, teacher, masks, 0.07
        )
        expected = _naive_ibot(
            student, teacher, masks, 0.07, 0.1, average_over
        )
        assert loss.item() == pytest.approx(expected, rel=1e-5), layout


def test_ibot_patch_loss_defaults_and_errors():
    assert iBOTPatchLoss().center.shape == (1, 65536)
    cfg = dict(type='Constant', val=0.0)
    assert iBOTPatchLoss(out_dim=4, init_cfg=cfg).init_cfg == cfg
    torch.manual_seed(11)
    masks = torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=torch.bool)
    s, t = torch.randn(4, 3), torch.randn(4, 3)
    loss = iBOTPatchLoss(out_dim=3, centering='sinkhorn_knopp')(
        s, t, masks, 0.5
    )  # 3 Sinkhorn-Knopp iterations by default
    q = _naive_sinkhorn(t.tolist(), 0.5, 3)
    expected = 0.0
    for row in range(4):  # two images with two masked patches each
        logp = _log_softmax(s[row].tolist(), 0.1)
        expected += -sum(a * c for a, c in zip(q[row], logp)) / 2 / 2
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    loss_fn = iBOTPatchLoss(out_dim=3)
    for bad_s, bad_t in ((s[:3], t), (s, t[:3])):  # either one is wrong
        with pytest.raises(ValueError, match='masked-patch rows'):
            loss_fn(bad_s, bad_t, masks, 0.5)
    with pytest.raises(
        ValueError,
        match=r"^average_over='bad': use 'all_images' or 'masked_images'\.$",
    ):
        iBOTPatchLoss(out_dim=3, average_over='bad')


def test_koleo_eps_on_duplicates_tiny_features_and_message():
    # a sample and its copy are eps * sqrt(C) apart; log(that + eps)
    dup = torch.ones(3, 4)
    assert _koleo_reference(dup) == pytest.approx(-math.log(3e-8))
    assert KoLeoLoss()(dup).item() == pytest.approx(-math.log(3e-8), rel=1e-6)
    # a feature shorter than eps is divided by eps, not scaled to norm 1
    tiny = torch.tensor([[1e-10, 0.0], [1.0, 0.0], [0.2, 1.0]])
    assert KoLeoLoss()(tiny).item() == pytest.approx(
        _koleo_reference(tiny), rel=1e-5
    )
    with pytest.raises(
        ValueError,
        match=r'^KoLeoLoss expects \(B, C\) features, got \(2, 3, 4\)\.$',
    ):
        KoLeoLoss()(torch.zeros(2, 3, 4))
