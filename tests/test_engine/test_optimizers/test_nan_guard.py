"""NaN guard: skip non-finite steps, stop after too many in a row, and
skip on every rank together when only one rank sees the NaN."""

import pytest
import torch
from mmengine.optim import build_optim_wrapper

from mmssl.engine.optimizers import NaNGuardOptimWrapper
from tests.support.dist import file_init_method, init_gloo, spawn


def _wrapper(model, **kw):
    return NaNGuardOptimWrapper(
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1), **kw
    )


def test_nan_loss_skips_step_and_stops():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    wrapper = _wrapper(model, max_consecutive_skips=3)
    x = torch.randn(4, 3)
    w0 = model.weight.detach().clone()
    # inject a NaN
    wrapper.update_params(model(x).sum() * float('nan'))
    assert wrapper.last_step_skipped
    assert (wrapper.consecutive_skips, wrapper.total_skips) == (1, 1)
    assert torch.equal(model.weight, w0)
    assert model.weight.grad is None or not model.weight.grad.any()
    # a finite loss updates and resets the consecutive count
    wrapper.update_params(model(x).sum())
    assert not wrapper.last_step_skipped
    assert wrapper.consecutive_skips == 0 and wrapper.total_skips == 1
    assert not torch.equal(model.weight, w0)
    w1 = model.weight.detach().clone()
    wrapper.update_params(model(x).sum() * float('inf'))
    wrapper.update_params(model(x).sum() * float('nan'))
    with pytest.raises(RuntimeError, match='max_consecutive_skips=3'):
        wrapper.update_params(model(x).sum() * float('nan'))
    assert wrapper.total_skips == 4
    assert torch.equal(model.weight, w1)


def test_build_from_config_with_layer_decay_and_lr_mult():
    from mmssl.registry import MODELS

    model = MODELS.build(
        dict(
            type='DINO',
            backbone=dict(
                type='DINOVisionTransformer',
                arch=dict(embed_dims=16, num_layers=2, num_heads=2),
                img_size=16,
                patch_size=8,
            ),
            head=dict(
                type='DINOHead',
                in_channels=16,
                n_prototypes=8,
                hidden_channels=16,
                bottleneck_channels=4,
            ),
            loss=dict(type='DINOLoss', out_dim=8),
        )
    )
    wrapper = build_optim_wrapper(
        model,
        dict(
            type='NaNGuardOptimWrapper',
            max_consecutive_skips=5,
            optimizer=dict(type='AdamW', lr=1.0, weight_decay=0.04),
            clip_grad=dict(max_norm=3.0),
            constructor='LayerDecayOptimWrapperConstructor',
            paramwise_cfg=dict(
                layer_decay_rate=0.5,
                flat_decay_mult=0.0,
                custom_keys={'patch_embed': dict(lr_mult=0.2)},
            ),
        ),
    )
    assert isinstance(wrapper, NaNGuardOptimWrapper)
    assert wrapper.max_consecutive_skips == 5
    # mmengine adds a parameterless 'base' group for logging base_lr
    # (groups are fused by equal settings; each lists its param_names)
    groups = [g for g in wrapper.param_groups if 'param_names' in g]
    lrs = {n: g['lr'] for g in groups for n in g['param_names']}
    wds = {n: g['weight_decay'] for g in groups for n in g['param_names']}
    # depth 0 of 4 depths: 0.5 ** 3; patch embed additionally x0.2
    assert lrs['backbone.patch_embed.projection.weight'] == pytest.approx(
        0.125 * 0.2
    )
    assert lrs['backbone.cls_token'] == pytest.approx(0.125)
    assert lrs['backbone.layers.1.attn.qkv.weight'] == pytest.approx(0.5)
    assert lrs['head.mlp.0.weight'] == pytest.approx(1.0)
    assert wds['head.mlp.0.bias'] == 0.0
    assert wds['head.mlp.0.weight'] == pytest.approx(0.04)
    assert not any(n.startswith('teacher.') for n in lrs)


def _two_rank_worker(rank: int, init_method: str, out_dir: str) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    init_gloo(rank, 2, init_method)
    torch.manual_seed(0)  # the same initial weights on both ranks
    model = torch.nn.Linear(3, 1)
    ddp = DDP(model)
    wrapper = _wrapper(model)
    x = torch.arange(12.0).reshape(4, 3) / 10 + rank  # each rank its data

    def weights():
        return [p.detach().clone() for p in model.parameters()]

    out = dict(x=x, initial=weights())
    loss = ddp(x).sum()
    # the NaN appears on rank 1 only; rank 0's loss is finite
    wrapper.update_params(loss * float('nan') if rank == 1 else loss)
    out.update(
        after_nan=weights(),
        skipped=wrapper.last_step_skipped,
        total_skips=wrapper.total_skips,
        grads_cleared=all(
            p.grad is None or not p.grad.any() for p in model.parameters()
        ),
    )
    wrapper.update_params(ddp(x).sum())  # finite on both ranks
    out.update(after_finite=weights(), skipped2=wrapper.last_step_skipped)
    torch.save(out, f'{out_dir}/rank{rank}.pth')
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_nan_on_one_rank_skips_the_step_on_every_rank(tmp_path):
    """2 gloo ranks under DDP, a NaN loss on rank 1 only: both ranks skip
    (weights equal and unchanged, gradients cleared), and the next finite
    step moves both by the same, hand-computed SGD update."""
    spawn(_two_rank_worker, file_init_method(tmp_path), str(tmp_path))
    r0, r1 = (torch.load(tmp_path / f'rank{r}.pth') for r in range(2))
    for res in (r0, r1):
        assert res['skipped'] and res['total_skips'] == 1
        assert res['grads_cleared']
        assert not res['skipped2']
        for before, after in zip(res['initial'], res['after_nan']):
            assert torch.equal(after, before)  # no step on either rank
    # both ranks started from the same weights
    for a, b in zip(r0['initial'], r1['initial']):
        assert torch.equal(a, b)
    # loss = sum of the 4 outputs: dL/dW = column sums of x, dL/db = 4;
    # DDP averages the two ranks' gradients; SGD with lr 0.1
    w, b = (t.double() for t in r0['initial'])
    grad_w = (r0['x'].double().sum(0) + r1['x'].double().sum(0)) / 2
    expected = [w - 0.1 * grad_w, b - 0.1 * 4.0]
    for res in (r0, r1):
        for got, want in zip(res['after_finite'], expected):
            torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=0)


# Added to kill the mutants that survived .dev_scripts/mutation_test.py (see
# docs/dev/mutation_testing.md).
def test_skip_decided_by_the_all_reduced_flag(monkeypatch):
    """A finite loss here but a NaN on another rank: this rank skips too.

    The other rank is simulated by an all_reduce that adds its flag (1);
    the real two-process run is in the distributed NaN-guard test.
    """
    import mmssl.engine.optimizers.nan_guard_optim_wrapper as guard

    seen = []

    def other_rank_has_nan(data, op='sum', group=None):
        assert op == 'sum'
        seen.append(data.clone())
        data.add_(1.0)

    monkeypatch.setattr(guard, 'all_reduce', other_rank_has_nan)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    w0 = model.weight.detach().clone()
    wrapper = _wrapper(model)
    wrapper.update_params(model(torch.randn(4, 3)).sum())
    assert [t.tolist() for t in seen] == [[0.0]]  # this rank: finite
    assert wrapper.last_step_skipped and wrapper.total_skips == 1
    assert torch.equal(model.weight, w0)


def test_defaults_kwargs_scalar_and_messages(monkeypatch):
    from mmengine.logging import MessageHub, MMLogger

    from mmssl.engine.optimizers import NaNGuardCPUAmpOptimWrapper

    model = torch.nn.Linear(3, 1)
    assert _wrapper(model).max_consecutive_skips == 10
    assert not _wrapper(model).last_step_skipped
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    assert (
        NaNGuardCPUAmpOptimWrapper(optimizer=sgd).max_consecutive_skips == 10
    )
    cpu_amp = NaNGuardCPUAmpOptimWrapper(
        max_consecutive_skips=2, optimizer=sgd
    )
    assert cpu_amp.max_consecutive_skips == 2
    assert _wrapper(model, max_consecutive_skips=1).max_consecutive_skips == 1
    with pytest.raises(
        ValueError, match=r'^max_consecutive_skips must be >= 1, got 0\.$'
    ):
        _wrapper(model, max_consecutive_skips=0)
    # step_kwargs and zero_kwargs reach optimizer.step and zero_grad
    calls = []
    wrapper = _wrapper(model)
    x = torch.randn(4, 3)
    hub = MessageHub.get_instance('nan_guard_scalar_test')  # now current
    wrapper.update_params(
        model(x).sum(),
        step_kwargs=dict(closure=lambda: calls.append(1)),
        zero_kwargs=dict(set_to_none=False),
    )
    assert calls == [1]
    assert torch.equal(model.weight.grad, torch.zeros_like(model.weight))
    # the nan_skips scalar after every step; a warning at each skip
    assert hub.get_scalar('train/nan_skips').current() == 0
    warnings = []
    logger = MMLogger.get_current_instance()
    monkeypatch.setattr(logger, 'warning', warnings.append)
    wrapper.update_params(model(x).sum() * float('nan'))
    assert hub.get_scalar('train/nan_skips').current() == 1
    assert warnings == [
        'Non-finite loss (nan) on at least one rank: optimiser step and '
        'teacher update skipped (1 in a row, 1 in total).'
    ]
    stop = _wrapper(model, max_consecutive_skips=1)
    with pytest.raises(RuntimeError) as err:
        stop.update_params(model(x).sum() * float('inf'))
    assert str(err.value) == (
        'The loss was non-finite for 1 consecutive iterations '
        '(max_consecutive_skips=1); stopping. Try a lower learning rate, '
        'gradient clipping (optim_wrapper.clip_grad), fp32 instead of fp16 '
        '(--amp off or bf16), a batch size > 1 for KoLeo, or check the '
        'data for broken images.'
    )


def test_amp_wrapper_defaults_and_skip(monkeypatch):
    """NaNGuardAmpOptimWrapper sets up the guard (default 10) and skips a
    NaN step. mmengine's AmpOptimWrapper refuses to build without an
    accelerator: its check is told one is there, and the loss scaler is
    switched off, so the test runs the same on the CPU and on a GPU."""
    import warnings

    import mmengine.optim.optimizer.amp_optimizer_wrapper as amp

    from mmssl.engine.optimizers import NaNGuardAmpOptimWrapper

    monkeypatch.setattr(amp, 'is_cuda_available', lambda: True)
    model = torch.nn.Linear(3, 1)

    def build(**kw):
        sgd = torch.optim.SGD(model.parameters(), lr=0.1)
        with warnings.catch_warnings():  # GradScaler deprecation, no CUDA
            warnings.simplefilter('ignore')
            return NaNGuardAmpOptimWrapper(
                optimizer=sgd, loss_scale=dict(enabled=False), **kw
            )

    default = build()
    assert default.max_consecutive_skips == 10
    assert (default.consecutive_skips, default.total_skips) == (0, 0)
    assert not default.last_step_skipped
    wrapper = build(max_consecutive_skips=2)
    assert wrapper.max_consecutive_skips == 2
    with pytest.raises(ValueError, match='max_consecutive_skips must be >= 1'):
        build(max_consecutive_skips=0)
    w0 = model.weight.detach().clone()
    wrapper.update_params(model(torch.ones(2, 3)).sum() * float('nan'))
    assert wrapper.last_step_skipped and wrapper.total_skips == 1
    assert torch.equal(model.weight, w0)
    with pytest.raises(RuntimeError, match='max_consecutive_skips=2'):
        wrapper.update_params(model(torch.ones(2, 3)).sum() * float('inf'))


def test_fused_optimizer_skips_on_the_device_and_reports_at_interval():
    """Fused AdamW: the skip flag goes to the kernel; grad_norm and
    nan_skips reach the message hub every log_interval steps only."""
    from mmengine.logging import MessageHub

    hub = MessageHub.get_instance('nan_guard_device_test')
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    wrapper = NaNGuardOptimWrapper(
        optimizer=opt, clip_grad=dict(max_norm=100.0), log_interval=2
    )
    x = torch.randn(4, 3)
    hub.update_info('iter', 0)
    wrapper.update_params(model(x).sum())
    assert 'train/grad_norm' not in hub.log_scalars  # not read yet
    w1 = model.weight.detach().clone()
    hub.update_info('iter', 1)
    wrapper.update_params(model(x).sum() * float('nan'))
    assert torch.equal(model.weight, w1)
    assert opt.state[model.weight]['step'].item() == 1  # state untouched
    assert wrapper.skip_flag.item() == 1.0 and wrapper.total_skips == 1
    # read at iteration 1 (interval 2): the norm of the NaN step's grads
    assert hub.get_scalar('train/nan_skips').current() == 1
    assert 'train/grad_norm' in hub.log_scalars


def test_amp_scaler_skips_a_nan_loss_on_the_device(monkeypatch):
    """Under AMP the flag joins the loss scaler's inf check (a CPU
    GradScaler stands in for the CUDA one): the NaN step is skipped and
    the scale lowered; a finite step then updates."""
    import warnings

    import mmengine.optim.optimizer.amp_optimizer_wrapper as amp

    from mmssl.engine.optimizers import NaNGuardAmpOptimWrapper

    monkeypatch.setattr(amp, 'is_cuda_available', lambda: True)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        wrapper = NaNGuardAmpOptimWrapper(
            optimizer=opt, clip_grad=dict(max_norm=1.0), log_interval=50
        )
    wrapper.loss_scaler = torch.amp.GradScaler('cpu', init_scale=4.0)
    w0 = model.weight.detach().clone()
    wrapper.update_params(model(torch.ones(2, 3)).sum() * float('nan'))
    assert torch.equal(model.weight, w0)
    assert wrapper.total_skips == 1 and wrapper.loss_scaler.get_scale() == 2
    wrapper.update_params(model(torch.ones(2, 3)).sum())
    assert not torch.equal(model.weight, w0)
    assert wrapper.total_skips == 1 and not wrapper.last_step_skipped
