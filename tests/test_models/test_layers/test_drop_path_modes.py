"""Fixed-count stochastic depth (``drop_path_mode='fixed'`` and
``'fixed_stochastic'``): counts, expectation, gradients, the config knob
and the packed path."""

import copy
import itertools
import math

import pytest
import torch
from mmengine.config import Config

from mmssl.models.backbones import DINOv3ViT, DINOVisionTransformer
from mmssl.models.layers import drop_path as dp
from mmssl.models.layers.drop_path import (
    keep_count,
    keep_indices,
)
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.steps import Recorder, drop_add_residual

MODES = ('fixed', 'fixed_stochastic')
ARCH = dict(embed_dims=32, num_layers=3, num_heads=2, feedforward_channels=48)


def test_keep_count_rules(monkeypatch):
    # 'fixed': max(floor(B (1 - p)), 1), DINOv2's count
    assert keep_count(4, 0.4, 'fixed') == 2  # floor(2.4)
    assert keep_count(4, 0.05, 'fixed') == 3  # floor(3.8): drops 1 of 4
    assert keep_count(16, 0.4, 'fixed') == 9  # floor(9.6)
    assert keep_count(2, 0.9, 'fixed') == 1  # floor(0.2) -> at least 1
    assert keep_count(8, 0.0, 'fixed') == 8
    # 'fixed_stochastic': floor(B (1 - p) + U), here B (1 - p) = 2.4
    for u, want in ((0.0, 2), (0.59, 2), (0.61, 3), (0.999, 3)):
        monkeypatch.setattr(dp, 'host_uniform', lambda gen=None, u=u: u)
        assert keep_count(4, 0.4, 'fixed_stochastic') == want
    monkeypatch.setattr(dp, 'host_uniform', lambda gen=None: 0.0)
    assert keep_count(2, 0.9, 'fixed_stochastic') == 1  # at least 1
    with pytest.raises(ValueError, match='fixed-count modes'):
        keep_count(4, 0.4, 'bernoulli')


def test_fixed_stochastic_count_has_the_nominal_mean():
    gen = torch.Generator().manual_seed(0)
    n = 20000
    counts = [keep_count(5, 0.3, 'fixed_stochastic', gen) for _ in range(n)]
    assert set(counts) == {3, 4}  # floor(3.5) and floor(3.5) + 1
    # E[k] = 3.5; one draw's spread is 0.5, 5 standard errors bound the mean
    assert abs(sum(counts) / n - 3.5) <= 5 * 0.5 / math.sqrt(n)


def test_keep_indices_uniform_over_subsets():
    gen = torch.Generator().manual_seed(0)
    n, subsets = 6000, list(itertools.combinations(range(4), 2))
    freq = dict.fromkeys(subsets, 0)
    for _ in range(n):
        idx = keep_indices(4, 2, torch.device('cpu'), gen)
        assert idx.dtype == torch.int64 and idx.numel() == 2
        freq[tuple(sorted(idx.tolist()))] += 1
    # each subset: binomial(n, 1/6), sd = sqrt(n * 1/6 * 5/6) ~ 28.9
    sd = math.sqrt(n * 5 / 36)
    assert all(abs(f - n / 6) <= 5 * sd for f in freq.values()), freq


@pytest.mark.parametrize('mode', MODES)
def test_fixed_count_every_call_without_host_sync(mode, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError('host sync')

    branch = Recorder()
    x = torch.randn(10, 3, 4)
    torch.manual_seed(0)
    seen = set()
    with torch.no_grad():
        for _ in range(30):
            with monkeypatch.context() as m:  # no device -> host reads
                m.setattr(torch.Tensor, 'nonzero', refuse)
                m.setattr(torch.Tensor, 'item', refuse)
                m.setattr(torch.Tensor, '__bool__', refuse)
                m.setattr(torch.Tensor, 'tolist', refuse)
                out = drop_add_residual(x, branch, 0.25, True, mode=mode)
            changed = (out != x).flatten(1).any(1)
            kept = [i for i in range(10) if changed[i]]
            assert len(kept) == branch.sizes[-1]
            seen.add(tuple(kept))
    # B (1 - p) = 7.5: 'fixed' always 7, 'fixed_stochastic' 7 or 8
    want = {7} if mode == 'fixed' else {7, 8}
    assert set(branch.sizes) == want
    assert len(seen) > 5  # a new random subset at every call


def _enumerate(x, branch, p, mode, monkeypatch):
    """Exact E[drop_add_residual]: every k the mode can draw (with its
    probability) and every k-subset (equally likely, as checked above)."""
    B = x.shape[0]
    frac = B * (1 - p) - math.floor(B * (1 - p))
    if mode == 'fixed':
        plan = [(0.0, 1.0)]  # (U, probability); U unused by 'fixed'
    else:  # k = floor + 1 when U >= 1 - frac
        plan = [(0.0, 1 - frac), (0.999999, frac)]
    total = torch.zeros_like(x)
    for u, prob in plan:
        monkeypatch.setattr(dp, 'host_uniform', lambda gen=None, u=u: u)
        k = keep_count(B, p, mode)
        subsets = list(itertools.combinations(range(B), k))
        queue = [torch.tensor(s) for s in subsets]
        monkeypatch.setattr(  # where the block's draw looks it up
            dp, 'keep_indices', lambda b, c, d, g=None: queue.pop()
        )
        outs = [
            drop_add_residual(x, branch, p, True, mode=mode) for _ in subsets
        ]
        assert not queue  # one call per subset
        total += prob * torch.stack(outs).mean(0)
    return total


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('batch,p', [(5, 0.3), (4, 0.4), (6, 0.5)])
def test_equal_in_expectation_exact(mode, batch, p, monkeypatch):
    branch = Recorder()
    x = torch.randn(batch, 3, 4)
    with torch.no_grad():
        expect = x + branch.lin(x)
        got = _enumerate(x, branch, p, mode, monkeypatch)
    torch.testing.assert_close(got, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mode', MODES)
def test_equal_in_expectation_monte_carlo(mode):
    """No patching: the mean of n draws vs x + f(x). Given k, a row is
    x + (B/k) f with probability k/B, else x: variance f^2 (B/k - 1) <=
    f^2 (B/k_min - 1), so 5 standard errors bound the mean (fixed seed);
    the bound is tight enough to see the Bernoulli scale 1 / (1 - p)."""
    B, p, n = 5, 0.3, 4000
    branch = Recorder()
    x = torch.randn(B, 2, 4)
    torch.manual_seed(0)
    with torch.no_grad():
        full = branch.lin(x)
        mean = sum(
            drop_add_residual(x, branch, p, True, mode=mode) for _ in range(n)
        )
    mean = mean / n
    bound = 5 * full.abs() * math.sqrt(B / 3 - 1) / math.sqrt(n) + 1e-5
    assert ((mean - x - full).abs() <= bound).all()
    wrong = x + (3 / B) / (1 - p) * full  # 'fixed' with Bernoulli's scale
    assert ((wrong - x - full).abs() > bound).any()


@pytest.mark.parametrize('mode', MODES)
def test_gradients_reach_the_branch_from_kept_rows_only(mode):
    B = 8
    branch = Recorder()
    x = torch.randn(B, 3, 4, requires_grad=True)
    w = torch.randn(B, 3, 4)
    torch.manual_seed(3)
    out = drop_add_residual(x, branch, 0.5, True, mode=mode)
    (out * w).sum().backward()
    kept = [b for b in range(B) if not torch.equal(out[b], x[b])]
    dropped = [b for b in range(B) if b not in kept]
    k = branch.sizes[0]
    assert len(kept) == k and dropped
    assert torch.equal(x.grad[dropped], w[dropped])  # identity only
    # kept rows and the branch: as if the branch had seen them alone
    ref = Recorder()
    ref.lin.load_state_dict(branch.lin.state_dict())
    xk = x.detach()[kept].requires_grad_()
    ((xk + ref(xk) * B / k) * w[kept]).sum().backward()
    torch.testing.assert_close(x.grad[kept], xk.grad)
    torch.testing.assert_close(branch.lin.weight.grad, ref.lin.weight.grad)
    torch.testing.assert_close(branch.lin.bias.grad, ref.lin.bias.grad)


def _branch_batches(model, x):
    """Samples each block's FFN branch sees in one training forward
    (the DINO block sees them as packed (k * T, C) rows)."""
    tokens = 1 + model.num_register_tokens + 16  # 4x4 patches
    sizes = []
    hooks = [
        layer.ln2.register_forward_hook(
            lambda m, i, o: sizes.append(
                i[0].numel() // (tokens * i[0].shape[-1])
            )
        )
        for layer in model.layers
    ]
    model.train()(x)
    for h in hooks:
        h.remove()
    return sizes


@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_config_knob_builds_and_runs_fixed_counts(kind):
    register_all_modules()
    common = dict(arch=ARCH, patch_size=8, drop_path_rate=0.4)
    if kind == 'v2':
        cfg = dict(type='DINOVisionTransformer', img_size=32, **common)
    else:
        cfg = dict(type='DINOv3ViT', rope_rescale_coords=None, **common)
    model = MODELS.build(dict(cfg, drop_path_mode='fixed'))
    assert {layer.drop_path_mode for layer in model.layers} == {'fixed'}
    x = torch.randn(4, 3, 32, 32)
    # v2: linear rates 0, 0.2, 0.4 -> k = 4, 3, 2; v3: 0.4 everywhere
    want = [4, 3, 2] if kind == 'v2' else [2, 2, 2]
    assert _branch_batches(model, x) == want
    assert _branch_batches(MODELS.build(cfg), x) != want  # bernoulli
    with pytest.raises(ValueError, match=r"'bogus'.*'fixed_stochastic'"):
        MODELS.build(dict(cfg, drop_path_mode='bogus'))


def test_dinov2_demo_config_takes_the_knob():
    register_all_modules()
    cfg = Config.fromfile(
        'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
    )
    cfg.model.backbone.drop_path_rate = 0.2
    cfg.model.backbone.drop_path_mode = 'fixed_stochastic'
    model = MODELS.build(cfg.model)
    modes = {
        m.drop_path_mode
        for m in model.modules()
        if hasattr(m, 'drop_path_mode')
    }
    assert modes == {'fixed_stochastic'}


def test_backbones_reject_unknown_mode():
    with pytest.raises(ValueError, match='drop_path_mode=.fixd.'):
        DINOVisionTransformer(arch=ARCH, img_size=32, drop_path_mode='fixd')
    with pytest.raises(ValueError, match="'bernoulli', 'static', 'fixed'"):
        DINOv3ViT(arch=ARCH, drop_path_mode='fixd')


def test_compiled_blocks_with_changing_batch_sizes():
    # DINOv3 compiles whole blocks, so the count and subset draws are
    # traced too; the batch size turns symbolic after the second size.
    model = DINOv3ViT(
        arch=dict(ARCH, num_layers=2),
        patch_size=8,
        drop_path_rate=0.5,
        drop_path_mode='fixed_stochastic',
        rope_rescale_coords=None,
        compile_blocks=dict(backend='aot_eager'),
    ).train()
    for b in (4, 6, 5):
        x = torch.randn(b, 3, 32, 32, requires_grad=True)
        out = model(x)[0]
        out.sum().backward()
        assert out.shape == (b, 32) and torch.isfinite(x.grad).all()


@pytest.mark.parametrize('mode', MODES)
def test_activation_checkpointing_replays_the_draws(mode):
    # Recomputation in backward must run the branches on the same subset
    # (torch.utils.checkpoint restores the RNG states, the host U too).
    plain = DINOVisionTransformer(
        arch=ARCH,
        img_size=32,
        patch_size=8,
        drop_path_rate=0.5,
        drop_path_mode=mode,
    ).train()
    ckpt = copy.deepcopy(plain)
    ckpt.with_cp = True
    x = torch.randn(6, 3, 32, 32)
    results = []
    for model in (plain, ckpt):
        torch.manual_seed(4)
        out = model(x)[0]
        out.pow(2).sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        results.append((out.detach(), grads))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=0, atol=0)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)
