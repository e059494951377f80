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
