"""Entropies of the DINO targets and predictions, relative to ln K."""

import math

import pytest
import torch

from mmssl.models.losses import DINOLoss
from mmssl.models.losses.dino_loss import relative_entropy

# q = (1/8, 1/8, 1/4, 1/2): H = 2 * ln8 / 8 + ln4 / 4 + ln2 / 2 = 1.75 ln 2,
# i.e. 0.875 of ln 4
Q = torch.tensor([1 / 8, 1 / 8, 1 / 4, 1 / 2])


def test_relative_entropy_by_hand():
    assert relative_entropy(Q).item() == pytest.approx(0.875)
    assert relative_entropy(torch.full((3, 4), 0.25)).item() == 1.0
    one_hot = torch.tensor([[0.0, 1.0, 0.0, 0.0]])  # 0 ln 0 = 0
    assert relative_entropy(one_hot).item() == 0.0
    rows = torch.stack([Q, torch.full((4,), 0.25)])  # mean of the rows
    assert relative_entropy(rows, rows.log()).item() == pytest.approx(0.9375)
    with pytest.raises(ValueError, match='K >= 2, got 1'):
        relative_entropy(torch.ones(2, 1))


def test_dino_loss_returns_target_and_student_entropy():
    loss_fn = DINOLoss(out_dim=4, student_temp=0.1)  # centre 0 at first
    teacher = Q.log().expand(2, 1, 4)  # (G, B, K), teacher_temp 1 -> Q
    student = torch.stack(
        [torch.zeros(1, 4), 0.1 * Q.log().view(1, 4)]
    )  # (V, B, K): view 0 uniform, view 1 predicts Q
    loss, stats = loss_fn(student, teacher, 1.0, return_stats=True)
    assert set(stats) == {'target_entropy', 'student_entropy'}
    assert stats['target_entropy'].item() == pytest.approx(0.875)
    assert stats['student_entropy'].item() == pytest.approx(0.9375)
    # pairs (t0, s1): H(Q) = 1.75 ln 2; (t1, s0): ln 4 = 2 ln 2
    assert loss.item() == pytest.approx(1.875 * math.log(2), rel=1e-6)
    assert not stats['target_entropy'].requires_grad
    plain = DINOLoss(out_dim=4, student_temp=0.1)(student, teacher, 1.0)
    assert torch.equal(plain, loss)  # the flag changes no value


def test_uniform_fixed_point_gives_ln_k_and_entropies_one():
    k = 256
    loss_fn = DINOLoss(out_dim=k, centering='sinkhorn_knopp')
    teacher = torch.zeros(2, 8, k)  # every prototype alike
    student = torch.zeros(6, 8, k)
    loss, stats = loss_fn(student, teacher, 0.04, return_stats=True)
    assert loss.item() == pytest.approx(math.log(k), rel=1e-5)
    assert stats['target_entropy'].item() == pytest.approx(1.0, rel=1e-5)
    assert stats['student_entropy'].item() == pytest.approx(1.0, rel=1e-5)
