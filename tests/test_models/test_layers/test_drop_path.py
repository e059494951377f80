"""Batch-subset stochastic depth: same distribution as mmcv's DropPath,
computed only for the kept samples."""

import pytest
import torch
from mmcv.cnn.bricks.drop import drop_path as mmcv_drop_path
from mmpretrain.models.backbones.vision_transformer import (
    TransformerEncoderLayer,
)
from torch import nn

from mmssl.models.backbones import DINOVisionTransformer
from mmssl.models.layers import DINOBlock
from mmssl.models.layers.drop_path import drop_path_rates
from tests.support.steps import Recorder, drop_add_residual


def test_eval_is_exact_and_runs_every_sample():
    branch = Recorder()
    x = torch.randn(8, 3, 4)
    out = drop_add_residual(x, branch, 0.4, training=False)
    assert torch.equal(out, x + branch.lin(x))
    assert branch.sizes == [8]


def test_kept_rows_scaled_dropped_rows_skip_the_branch():
    branch = Recorder()
    x = torch.randn(64, 3, 4)
    gen = torch.Generator().manual_seed(0)
    out = drop_add_residual(x, branch, 0.4, training=True, generator=gen)
    full = branch.lin(x)
    dropped = [b for b in range(64) if torch.equal(out[b], x[b])]
    kept = [b for b in range(64) if b not in dropped]
    assert 10 < len(dropped) < 40  # both outcomes drawn
    # the branch ran once, on the kept rows only
    assert branch.sizes == [len(kept)]
    torch.testing.assert_close(
        out[kept], x[kept] + full[kept] / 0.6, rtol=1e-6, atol=1e-6
    )


def test_gradients_reach_the_branch_from_kept_rows_only():
    branch = Recorder()
    x = torch.randn(32, 3, 4, requires_grad=True)
    w = torch.randn(32, 3, 4)
    gen = torch.Generator().manual_seed(3)
    out = drop_add_residual(x, branch, 0.5, training=True, generator=gen)
    (out * w).sum().backward()
    dropped = [b for b in range(32) if torch.equal(out[b], x[b])]
    kept = [b for b in range(32) if b not in dropped]
    assert dropped and kept
    # dropped rows: identity only
    assert torch.equal(x.grad[dropped], w[dropped])
    # branch parameters: as if the branch had seen the kept rows alone
    ref = Recorder()
    ref.lin.load_state_dict(branch.lin.state_dict())
    xk = x.detach()[kept]
    (ref(xk) * w[kept] / 0.5).sum().backward()
    torch.testing.assert_close(branch.lin.weight.grad, ref.lin.weight.grad)
    torch.testing.assert_close(branch.lin.bias.grad, ref.lin.bias.grad)


def test_all_dropped_keeps_parameters_in_the_graph():
    branch = Recorder()
    x = torch.randn(4, 3, 4)
    out = drop_add_residual(x, branch, 0.999999, training=True)
    assert torch.equal(out, x)
    out.sum().backward()  # an empty branch still gives (zero) gradients
    assert branch.sizes == [0]
    assert torch.equal(branch.lin.weight.grad, torch.zeros(4, 4))


def test_equal_in_expectation_to_mmcv_drop_path():
    """Average of N draws of both paths vs the expectation x + branch(x);
    one draw's spread is |branch| * sqrt(p / (1 - p)), so 5 standard errors
    bound the mean (fixed seed)."""
    p, n = 0.4, 3000
    branch = Recorder()
    x = torch.randn(16, 2, 4)
    with torch.no_grad():
        full = branch.lin(x)
        expect = x + full
        torch.manual_seed(0)
        ours = sum(drop_add_residual(x, branch, p, True) for _ in range(n))
        mmcv = sum(x + mmcv_drop_path(full, p, True) for _ in range(n))
    bound = 5 * full.abs() * (p / (1 - p)) ** 0.5 / n**0.5 + 1e-5
    assert ((ours / n - expect).abs() <= bound).all()
    assert ((mmcv / n - expect).abs() <= bound).all()
    # the bound is tight enough to see a missing 1/keep_prob scale
    assert ((x + (1 - p) * full - expect).abs() > bound).any()


def test_drop_path_rates():
    assert drop_path_rates(0.4, 3) == pytest.approx([0.0, 0.2, 0.4])
    assert drop_path_rates(0.4, 3, 'uniform') == [0.4] * 3
    with pytest.raises(ValueError, match='drop_path_schedule'):
        drop_path_rates(0.4, 3, 'cosine')
    with pytest.raises(ValueError, match='drop_path_rate'):
        drop_path_rates(1.0, 3)


def test_block_keeps_state_dict_keys_and_eval_output():
    kwargs = dict(
        embed_dims=32,
        num_heads=4,
        feedforward_channels=64,
        layer_scale_init_value=0.5,
    )
    torch.manual_seed(0)
    plain = TransformerEncoderLayer(**kwargs).eval()
    torch.manual_seed(0)  # same draws, same initial weights
    block = DINOBlock(**kwargs, drop_path_rate=0.4).eval()
    assert block.drop_path_rate == 0.4
    assert list(block.state_dict()) == list(plain.state_dict())
    for a, b in zip(block.state_dict().values(), plain.state_dict().values()):
        assert torch.equal(a, b)
    block.load_state_dict(plain.state_dict())
    x = torch.randn(2, 5, 32)
    torch.testing.assert_close(block(x), plain(x), rtol=0, atol=1e-6)


def test_backbone_uniform_schedule_and_exact_eval():
    arch = dict(embed_dims=32, num_layers=3, num_heads=4)
    cfg = dict(arch=arch, img_size=28, patch_size=14)
    ref = DINOVisionTransformer(**cfg).eval()
    lin = DINOVisionTransformer(**cfg, drop_path_rate=0.4).eval()
    uni = DINOVisionTransformer(
        **cfg, drop_path_rate=0.4, drop_path_schedule='uniform'
    ).eval()
    assert [b.drop_path_rate for b in lin.layers] == pytest.approx(
        [0.0, 0.2, 0.4]
    )
    assert [b.drop_path_rate for b in uni.layers] == [0.4] * 3
    lin.load_state_dict(ref.state_dict())  # same keys, strict
    x = torch.randn(2, 3, 28, 28)
    assert torch.equal(lin(x)[0], ref(x)[0])


def test_compiled_with_changing_batch_sizes():
    # Dynamo makes the batch size symbolic after the second size; the keep
    # mask's torch.rand then failed with 'SymIntArrayRef expected to
    # contain only concrete integers' (seen on an H200 with
    # benchmark_train.py --compile). The global RNG is the training case.
    lin = nn.Linear(4, 4)

    def step(x):
        return drop_add_residual(x, lin, 0.5, training=True)

    compiled = torch.compile(step)
    torch.manual_seed(0)
    with torch.no_grad():
        for b in (4, 6, 5, 7):
            x = torch.randn(b, 3, 4)
            out = compiled(x)
            assert out.shape == x.shape
            full = x + lin(x) / 0.5
            for row in range(b):  # each row dropped or kept-and-scaled
                assert torch.allclose(out[row], x[row]) or torch.allclose(
                    out[row], full[row], atol=1e-6
                )
