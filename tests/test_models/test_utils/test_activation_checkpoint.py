"""Selective (per-op) activation checkpointing, ``with_cp='selective'``:
the same values and gradients as no checkpointing, matrix products kept
(not recomputed in backward) while pointwise ops are recomputed; full
checkpointing recomputes both. The 2-rank DDP run is in
``test_dino_vit.py`` (``test_ddp_with_cp_two_forwards_per_step``)."""

import copy
from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mmssl.models.backbones import DINOv3ViT, DINOVisionTransformer
from mmssl.models.utils.activation_checkpoint import (
    check_cp_mode,
    selective_cp_available,
)

needs_sac = pytest.mark.skipif(
    not selective_cp_available(),
    reason='torch lacks torch.utils.checkpoint.'
    'create_selective_checkpoint_contexts (torch < 2.4)',
)
MM = ('mm', 'addmm', 'bmm', 'baddbmm')


class _OpCounter(TorchDispatchMode):
    """Counts the ATen ops run (by name without overload)."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _dino_vit():
    torch.manual_seed(0)
    model = DINOVisionTransformer(
        arch=dict(embed_dims=32, num_layers=2, num_heads=4),
        img_size=56,
        patch_size=14,
        num_register_tokens=1,
    )
    model.init_weights()
    return model.train()


def _dinov3_vit():
    torch.manual_seed(0)
    model = DINOv3ViT(
        arch=dict(embed_dims=32, num_layers=2, num_heads=4),
        patch_size=14,
        out_type='raw',
        rope_rescale_coords=None,
    )
    model.init_weights()
    return model.train()


def _run(model, with_cp):
    """Forward two crops (one masked), backward; the ops of backward."""
    model = copy.deepcopy(model)
    model.with_cp = with_cp
    x = torch.randn(2, 3, 56, 42, generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[True, False] * 6, [False, True] * 6])
    out = model(x, mask)[0]
    loss = out.pow(2).mean() + model(x[..., :28, :28])[0].mean()
    with _OpCounter() as counter:
        loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    return out.detach(), grads, counter.counts


@needs_sac
@pytest.mark.parametrize('build', [_dino_vit, _dinov3_vit])
def test_selective_equals_no_checkpointing(build):
    model = build()
    out, grads, plain = _run(model, False)
    out_sel, grads_sel, sel = _run(model, 'selective')
    _, _, full = _run(model, True)
    torch.testing.assert_close(out_sel, out, rtol=0, atol=0)
    assert grads_sel.keys() == grads.keys()
    for name in grads:
        torch.testing.assert_close(
            grads_sel[name], grads[name], rtol=1e-6, atol=1e-7, msg=name
        )
    mms = {
        name: sum(c[op] for op in MM)
        for name, c in (('plain', plain), ('selective', sel), ('full', full))
    }
    # selective: no forward matmul is run again in backward ...
    assert mms['selective'] == mms['plain'], mms
    # ... full checkpointing runs them all again
    assert mms['full'] > mms['plain'], mms
    # pointwise ops are recomputed by both (GELU of the MLP)
    assert plain['gelu'] == 0
    assert sel['gelu'] == full['gelu'] == 4  # 2 blocks x 2 crops


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="'selective'"):
        check_cp_mode('by_op')
    with pytest.raises(ValueError, match='with_cp=2'):
        DINOVisionTransformer(arch='t', with_cp=2)
    assert check_cp_mode('full') == 'full'
    assert check_cp_mode(False) is False
