"""``drop_path_mode='static'``: a fixed number of rows per branch, the
nominal rate exactly, no host value."""

import math

import pytest
import torch

from mmssl.models.layers import DINOBlock
from mmssl.models.layers.drop_path import (
    static_draws,
    static_keep_count,
)
from mmssl_dev.step_phases import KernelCounter
from tests.support.steps import (
    HostSyncCounter,
    Recorder,
    drop_add_residual,
)


@pytest.mark.parametrize(
    'batch,p,k',
    [(8, 0.4, 5), (5, 0.3, 4), (4, 0.25, 3), (4, 0.9, 1), (16, 0.0, 16)],
)
def test_the_branch_always_sees_ceil_rows(batch, p, k):
    # k = ceil(B(1 - p)): 4.8 -> 5, 3.5 -> 4, 3 -> 3, 0.4 -> 1
    assert static_keep_count(batch, p) == k
    branch = Recorder()
    x = torch.randn(batch, 3, 4)
    for _ in range(20):
        out = drop_add_residual(x, branch, p, True, mode='static')
        assert out.shape == x.shape
    assert branch.sizes == [k] * 20


def test_weights_and_indices():
    order, weight, (k,) = static_draws(5, [0.3], torch.device('cpu'))
    idx, w = order[0, :k], weight[0, :k]
    assert idx.shape == w.shape == (4,)
    assert len(set(idx.tolist())) == 4  # distinct samples
    keep = 0.7
    assert torch.equal(w[:3], torch.full((3,), 1 / keep))
    assert w[3].item() in (0.0, pytest.approx(1 / keep))


def test_expectation_and_drop_rate_are_exact():
    """Mean of N draws vs x + branch(x), and each sample's empirical drop
    rate vs p, within 5 standard errors (fixed seed). B = 5, p = 0.3:
    4 rows run, the 4th kept with probability 0.5."""
    B, p, n = 5, 0.3, 4000
    branch = Recorder()
    x = torch.randn(B, 2, 4)
    torch.manual_seed(0)
    total = torch.zeros_like(x)
    dropped = torch.zeros(B)
    with torch.no_grad():
        full = branch.lin(x)
        for _ in range(n):
            out = drop_add_residual(x, branch, p, True, mode='static')
            total += out
            dropped += (out == x).flatten(1).all(1).float()
    rate = dropped / n
    se = math.sqrt(p * (1 - p) / n)
    assert ((rate - p).abs() < 5 * se).all(), rate  # every sample
    bound = 5 * full.abs() * math.sqrt(p / (1 - p)) / math.sqrt(n) + 1e-5
    assert ((total / n - (x + full)).abs() <= bound).all()
    # kept rows are branch / (1 - p): the bound sees a missing scale, and
    # the rate test sees a k-th row always kept (drop rate 0.2, not 0.3)
    assert ((x + (1 - p) * full - (x + full)).abs() > bound).any()
    assert abs(1 - 4 / B - p) > 5 * se


def _block(mode='static', rate=0.5):
    torch.manual_seed(0)
    return DINOBlock(16, 2, 32, drop_path_rate=rate, drop_path_mode=mode)


def test_block_training_step_asks_the_host_for_nothing():
    block = _block().train()
    x = torch.randn(6, 5, 16, requires_grad=True)
    with HostSyncCounter() as counter:
        block(x).sum().backward()
    assert counter.counts == {}
    # the counter sees the Bernoulli mode's nonzero
    with HostSyncCounter() as counter:
        _block('bernoulli').train()(x).sum().backward()
    assert counter.counts['nonzero'] > 0


def test_block_is_built_with_its_rate_and_drops_only_with_autograd():
    block = _block(rate=0.5).train()
    assert block.drop_path_rate == 0.5 and block.drop_path_mode == 'static'
    x = torch.randn(6, 5, 16)
    with torch.no_grad():  # the EMA teacher's case: every branch, unscaled
        whole = block(x)
        torch.testing.assert_close(block.eval()(x), whole)
    block.train()
    torch.manual_seed(1)
    out = block(x).detach()
    assert not torch.allclose(out, whole)
    with pytest.raises(ValueError, match='drop_path_rate'):
        DINOBlock(16, 2, 32, drop_path_rate=1.0)


def test_batched_draws_match_one_branch_at_a_time():
    """static_draws: per branch k_i distinct samples, the first k_i - 1
    weighted 1 / keep, the k-th 0 or 1 / keep, and each sample kept with
    probability keep_prob (2000 seeded draws, 5 standard errors)."""

    rates, B, n = [0.3, 0.1, 0.5], 5, 2000
    torch.manual_seed(0)
    kept = torch.zeros(len(rates), B)
    for step in range(n):
        order, weight, counts = static_draws(B, rates, torch.device('cpu'))
        for i, k in enumerate(counts):
            kept[i].index_add_(0, order[i, :k], (weight[i, :k] > 0).float())
        if step >= 10:
            continue
        assert counts == [static_keep_count(B, p) for p in rates] == [4, 5, 3]
        for i, (p, k) in enumerate(zip(rates, counts)):
            idx, w = order[i, :k], weight[i, :k]
            assert len(set(idx.tolist())) == k
            assert torch.equal(w[:-1], torch.full((k - 1,), 1 / (1 - p)))
            assert w[-1].item() in (0.0, pytest.approx(1 / (1 - p)))
    for i, p in enumerate(rates):
        se = math.sqrt(p * (1 - p) / n)
        assert ((kept[i] / n - (1 - p)).abs() < 5 * se).all(), kept[i] / n


@pytest.mark.parametrize('packed', [False, True])
def test_one_draw_per_forward_whatever_the_depth(packed):
    """A 'static' backbone draws its kept samples once per forward and
    crop group (2 rand, 1 sort), not per block: on a GPU every extra
    kernel of a launch-bound step costs time."""
    from mmssl.models.backbones import DINOVisionTransformer

    counts = {}
    for depth in (2, 6):
        torch.manual_seed(0)
        vit = DINOVisionTransformer(
            arch=dict(embed_dims=16, num_layers=depth, num_heads=2,
                      feedforward_channels=32),
            img_size=16, patch_size=8, drop_path_rate=0.3,
            drop_path_mode='static', out_type='raw',
        ).train()  # fmt: skip
        xs = [torch.randn(4, 3, 16, 16), torch.randn(6, 3, 8, 8)]
        with KernelCounter() as counter:
            if packed:
                vit.forward_packed(xs)
            else:
                for x in xs:
                    vit(x)
        counts[depth] = counter.counts['other']
    for depth, ops in counts.items():
        assert ops['rand'] == 4, (depth, ops['rand'])
        assert ops['sort'] == 2, (depth, ops['sort'])
    # per extra block: one gather per branch (and per group unpacked)
    more = counts[6]['index_select'] - counts[2]['index_select']
    assert more == 4 * 2 * (1 if packed else 2)
