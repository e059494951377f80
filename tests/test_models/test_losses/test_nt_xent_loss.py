"""NTXentLoss / nt_xent_loss against a plain float64 loop."""

import math

import pytest
import torch

from mmssl.models.losses import NTXentLoss, nt_xent_loss


def _loop_nt_xent(z: torch.Tensor, t: float) -> float:
    """SimCLR's eq. (1), one row at a time; pairs are rows 2k, 2k+1."""
    z = z.double().tolist()
    n = len(z)

    def cos(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(y * y for y in b))
        return dot / (na * nb)

    total = 0.0
    for i in range(n):
        j = i + 1 if i % 2 == 0 else i - 1
        denom = sum(math.exp(cos(z[i], z[k]) / t) for k in range(n) if k != i)
        total += -math.log(math.exp(cos(z[i], z[j]) / t) / denom)
    return total / n


@pytest.mark.parametrize('t', [0.1, 0.5])
def test_matches_plain_loop(t):
    torch.manual_seed(0)
    z = torch.randn(6, 5, dtype=torch.float64)
    got = nt_xent_loss(z, t)
    assert got.item() == pytest.approx(_loop_nt_xent(z, t), rel=1e-10)
    assert NTXentLoss(t)(z).item() == pytest.approx(got.item(), rel=1e-12)


def test_pairs_are_interleaved():
    # rows 0/1 and 2/3 are identical pairs: a low loss; pairing 0 with 2
    # instead (the layout (view1 of all, view2 of all)) gives a high one
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    good = torch.stack([a, a, b, b])
    bad = torch.stack([a, b, a, b])
    assert nt_xent_loss(good, 0.1) < 0.01
    assert nt_xent_loss(bad, 0.1) > 5


def test_rejects_odd_or_tiny_batches():
    with pytest.raises(ValueError, match='pairs'):
        nt_xent_loss(torch.randn(5, 3), 0.1)
    with pytest.raises(ValueError, match='pairs'):
        nt_xent_loss(torch.randn(2, 3), 0.1)
