"""Selective activation checkpointing on a CUDA device (skipped without
one): the gradients of no checkpointing, and the peak memory of one
forward+backward ordered full < selective < none (printed, for
docs/en/fsdp.md). Run with ``python -m pytest -n 0 tests/test_cuda -s``.
"""

import copy

import pytest
import torch

from mmssl.models.backbones import DINOVisionTransformer
from mmssl.models.utils.activation_checkpoint import selective_cp_available

DEVICE = 'cuda'
pytestmark = [
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason='needs a CUDA device'
    ),
    pytest.mark.skipif(
        not selective_cp_available(),
        reason='torch lacks create_selective_checkpoint_contexts',
    ),
]


def _step(model, with_cp, x, amp):
    """Peak memory (bytes above the start) and gradients of one step."""
    model = copy.deepcopy(model)
    model.with_cp = with_cp
    if DEVICE == 'cuda':
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
    with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=amp):
        out = model(x)[0]
    out.float().pow(2).mean().backward()
    peak = 0
    if DEVICE == 'cuda':
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - start
    grads = {n: p.grad.float() for n, p in model.named_parameters()}
    return peak, grads


@pytest.mark.parametrize('amp', [False, True])
def test_selective_grads_and_memory(amp):
    torch.manual_seed(0)
    model = DINOVisionTransformer(
        arch=dict(
            embed_dims=256,
            num_layers=4,
            num_heads=4,
            feedforward_channels=1024,
        ),
        img_size=224,
        patch_size=16,
        out_type='raw',
    )
    model.init_weights()
    model = model.to(DEVICE).train()
    x = torch.randn(16, 3, 224, 224, device=DEVICE)
    peaks, grads = {}, {}
    for mode in (False, 'selective', True):
        peaks[mode], grads[mode] = _step(model, mode, x, amp)
    for name, ref in grads[False].items():
        err = (grads['selective'][name] - ref).norm() / ref.norm().clamp(
            min=1e-12
        )
        # same kernels, same saved matmuls: equal up to the attention
        # backward's atomics (and bf16 rounding with amp)
        assert err < (1e-2 if amp else 1e-4), (name, float(err))
    mib = {k: round(v / 2**20, 1) for k, v in peaks.items()}
    print(
        f'peak MiB above the model (amp={amp}): none {mib[False]}, '
        f'selective {mib["selective"]}, full {mib[True]}'
    )
    if DEVICE == 'cuda':
        assert peaks[True] < peaks['selective'] < peaks[False], mib
