"""DINOBlock in its two parameter layouts (mmpretrain's, DINOv3's), its
``'floor'`` keep rule, the masked key bias and the mask token."""

import pytest
import torch
from mmcv.cnn.bricks.drop import DropPath

from mmssl.models.layers import DINOBlock, MaskedBiasLinear
from mmssl.models.layers.mask_token import apply_mask_token


def _block(hidden=24, **kw):
    torch.manual_seed(0)
    block = DINOBlock(16, 2, hidden, layer_scale_init_value=0.5, **kw)
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.3)
    return block


def test_layer_scale_sits_where_the_layout_puts_it():
    inner = dict(_block().named_parameters())
    assert 'attn.gamma1.weight' in inner and 'ffn.gamma2.weight' in inner
    assert not any(k.startswith('ls') for k in inner)
    swiglu = _block(36, ffn_type='swiglu', swiglu_align=16)
    outer = dict(swiglu.named_parameters())
    assert 'ls1.gamma' in outer and 'ls2.gamma' in outer
    assert not any('gamma1' in k or 'gamma2' in k for k in outer)
    assert outer['ffn.w1.weight'].shape == (32, 16)  # 2/3 * 36, up to 16


def test_floor_rule_drops_what_mmcv_drop_path_drops():
    """DINOv3's blocks keep the samples mmcv's DropPath kept with the
    same random numbers (it runs every sample and zeroes the others)."""
    block = _block(ffn_type='mlp', drop_path_rate=0.5, keep_rule='floor')
    block.train()
    x = torch.randn(8, 5, 16)
    torch.manual_seed(3)
    got = block(x)
    drop = DropPath(0.5)
    torch.manual_seed(3)
    want = x + drop(block.ls1(block.attn(block.ln1(x))))
    want = want + drop(block.ls2(block.ffn(block.ln2(want))))
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(got, block.eval()(x))  # something dropped
    with pytest.raises(ValueError, match='keep_rule'):
        DINOBlock(16, 2, 24, keep_rule='above')


def test_masked_key_bias():
    qkv = MaskedBiasLinear(4, 12)
    assert qkv.bias_mask.tolist() == [1] * 4 + [0] * 4 + [1] * 4
    with torch.no_grad():
        qkv.weight.zero_()
        qkv.bias.fill_(2.0)
    out = qkv(torch.randn(3, 4))
    assert (out[:, 4:8] == 0).all() and (out[:, :4] == 2).all()
    with pytest.raises(ValueError, match='3 equal parts'):
        MaskedBiasLinear(4, 10)


def test_mask_token():
    x = torch.randn(2, 6, 4)
    token = torch.full((4,), 7.0)
    mask = torch.zeros(2, 2, 3, dtype=torch.bool)
    mask[1, 0, 2] = True
    out = apply_mask_token(x, mask, token, (2, 3))
    assert (out[1, 2] == 7).all()
    assert torch.equal(out[0], x[0]) and torch.equal(out[1, 3:], x[1, 3:])
    assert apply_mask_token(x, None, token, (2, 3)) is x
    with pytest.raises(ValueError, match='2x3 patch grid'):
        apply_mask_token(x, mask[:, :1], token, (2, 3))
