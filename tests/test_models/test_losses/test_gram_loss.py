"""GramLoss and the local-crop weight of DINOLoss, against plain loops."""

import math

import pytest
import torch

from mmssl.models.losses import DINOLoss, GramLoss


def _unit(v):
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def _gram_loop(student, teacher, clip=None):
    """Image-level Gram MSE in float64 with explicit loops."""
    total, count = 0.0, 0
    for s_img, t_img in zip(student.tolist(), teacher.tolist()):
        s_img = [_unit(v) for v in s_img]
        t_img = [_unit(v) for v in t_img]
        n = len(s_img)
        for i in range(n):
            for j in range(n):
                s = sum(a * b for a, b in zip(s_img[i], s_img[j]))
                t = sum(a * b for a, b in zip(t_img[i], t_img[j]))
                if clip == 'both':
                    s, t = max(s, 0.0), max(t, 0.0)
                elif clip == 'teacher':
                    if s < 0 and t < 0:
                        s = 0.0
                    t = max(t, 0.0)
                total += (s - t) ** 2
                count += 1
    return total / count


def test_gram_loss_two_patches_by_hand():
    # one image, two 2-d patches: student (1,0),(0,1) -> Gram [[1,0],[0,1]];
    # teacher (1,0),(1,1) -> cos = 1/sqrt(2): loss = 2 * (1/sqrt2)^2 / 4
    student = torch.tensor([[[2.0, 0.0], [0.0, 3.0]]])
    teacher = torch.tensor([[[5.0, 0.0], [1.0, 1.0]]])
    loss = GramLoss()(student, teacher)
    assert loss.item() == pytest.approx(0.25, abs=1e-7)


@pytest.mark.parametrize('clip', [None, 'both', 'teacher'])
def test_gram_loss_matches_loops(clip):
    torch.manual_seed(0)
    student = torch.randn(2, 5, 3, dtype=torch.float64)
    teacher = torch.randn(2, 5, 3, dtype=torch.float64)
    loss = GramLoss(clip_negatives=clip)(student, teacher)
    assert loss.item() == pytest.approx(
        _gram_loop(student, teacher, clip), rel=1e-6
    )


def test_gram_loss_negatives_kept_by_default_and_grad_only_to_student():
    student = torch.tensor([[[1.0, 0.0], [-1.0, 0.1]]], requires_grad=True)
    teacher = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]], requires_grad=True)
    kept = GramLoss()(student, teacher)
    clipped = GramLoss(clip_negatives='both')(student, teacher)
    assert kept.item() == pytest.approx(_gram_loop(student, teacher))
    assert kept.item() > clipped.item() + 0.5  # cos ~ -1 vs 1 counts
    kept.backward()
    assert student.grad.abs().sum() > 0 and teacher.grad is None


def test_gram_loss_batch_level_and_errors():
    torch.manual_seed(1)
    s, t = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    flat = GramLoss(img_level=False)(s, t)
    expected = _gram_loop(s.reshape(1, 6, 4), t.reshape(1, 6, 4))
    assert flat.item() == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match='equal shapes'):
        GramLoss()(s, t[:, :2])
    with pytest.raises(ValueError, match='clip_negatives'):
        GramLoss(clip_negatives='student')


# 2.0: a weight that differs from 1 by a whole unit (a mutated
# ``local_weight != 2.0`` check skips exactly this weight)
@pytest.mark.parametrize('weight', [0.25, 2.0])
def test_dino_loss_local_weight_by_hand(weight):
    """(sum of global pairs + w * sum of local pairs) / number of pairs."""
    torch.manual_seed(2)
    k, batch = 4, 3
    student = torch.randn(3, batch, k, dtype=torch.float64)  # G=2, L=1
    teacher = torch.randn(2, batch, k, dtype=torch.float64)
    loss = DINOLoss(out_dim=k, student_temp=0.1)
    value = loss(student, teacher, 0.05, local_weight=weight).item()
    q = torch.softmax(teacher / 0.05, dim=-1).tolist()  # centre is 0
    logp = torch.log_softmax(student / 0.1, dim=-1).tolist()
    total = 0.0
    for t in range(2):
        for s in range(3):
            if s == t:
                continue
            ce = 0.0
            for b in range(batch):
                ce -= sum(qq * ll for qq, ll in zip(q[t][b], logp[s][b]))
            total += (weight if s >= 2 else 1.0) * ce / batch
    assert value == pytest.approx(total / 4, rel=1e-6)
