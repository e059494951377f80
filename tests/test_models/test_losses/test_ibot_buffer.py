"""The fixed-size masked-patch buffer: same iBOT loss as ``tokens[masks]``.

The buffer (DINOv2's static-shape trick) holds every masked patch in
``tokens[masks]`` order, then padding rows that must not change the loss,
the teacher targets or the centre, whatever their values.
"""

import pytest
import torch

from mmssl.models.algorithms.dino_parts import (
    mask_buffer_index,
    masked_tokens,
)
from mmssl.models.losses import iBOTPatchLoss, sinkhorn_knopp


def _masks():
    masks = torch.zeros(4, 6, dtype=torch.bool)
    masks[0, [0, 2]] = True
    masks[2, [1, 3, 4]] = True  # images 1 and 3 unmasked
    return masks  # 5 masked patches


def test_buffer_index_puts_the_masked_patches_first_in_order():
    masks = _masks()
    idx = mask_buffer_index(masks, 9)
    assert idx.shape == (9,)
    assert idx[:5].tolist() == [0, 2, 13, 15, 16]  # masks.flatten() hits
    assert not masks.flatten()[idx[5:]].any()  # padding: unmasked spots
    assert mask_buffer_index(masks, 100).shape == (24,)  # capped at numel
    tokens = torch.randn(4, 6, 3)
    torch.testing.assert_close(
        masked_tokens(tokens, masks, idx)[:5], tokens[masks]
    )
    # the shape depends on the bound only, not on the number masked
    other = torch.zeros_like(masks)
    other[3, 0] = True
    assert masked_tokens(tokens, other, mask_buffer_index(other, 9)).shape
    assert mask_buffer_index(other, 9).shape == idx.shape


def test_sinkhorn_ignores_padding_rows():
    torch.manual_seed(0)
    logits = torch.randn(7, 5)
    valid = torch.tensor([1, 1, 0, 1, 0, 1, 1], dtype=torch.bool)
    logits[2] = 1e4  # padding far above: must neither win nor overflow
    logits[4] = -1e4
    out = sinkhorn_knopp(logits, 0.07, 3, valid=valid)
    torch.testing.assert_close(
        out[valid], sinkhorn_knopp(logits[valid], 0.07, 3)
    )
    assert torch.isfinite(out).all()
    none = sinkhorn_knopp(logits, 0.07, 3, valid=torch.zeros(7).bool())
    assert torch.isfinite(none).all()


@pytest.mark.parametrize('centering', ['centering', 'sinkhorn_knopp'])
@pytest.mark.parametrize('average_over', ['all_images', 'masked_images'])
def test_padded_buffer_equals_masked_select(centering, average_over):
    torch.manual_seed(1)
    masks, k = _masks(), 8
    s_tok, t_tok = torch.randn(4, 6, k), torch.randn(4, 6, k)
    kw = dict(out_dim=k, centering=centering, average_over=average_over)
    plain, padded = iBOTPatchLoss(**kw), iBOTPatchLoss(**kw)
    for loss_fn in (plain, padded):  # a non-zero centre to start from
        loss_fn.center.normal_()
    padded.center.copy_(plain.center)
    idx = mask_buffer_index(masks, 11)  # 5 masked + 6 padding rows
    s_pad, t_pad = s_tok.flatten(0, 1)[idx], t_tok.flatten(0, 1)[idx]
    t_pad[5:] = float('inf')  # garbage in the padding changes nothing
    s_pad = s_pad.requires_grad_()
    s_sel = s_tok[masks].requires_grad_()
    want = plain(s_sel, t_tok[masks], masks, 0.05)
    got = padded(s_pad, t_pad, masks, 0.05, index=idx)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(padded.center, plain.center)
    want.backward()
    got.backward()
    torch.testing.assert_close(s_pad.grad[:5], s_sel.grad)
    assert (s_pad.grad[5:] == 0).all()
    with pytest.raises(ValueError, match='rows'):
        padded(s_pad[:4], t_pad[:4], masks, 0.05, index=idx)
