"""The position-embedding resize against a plain-Python bicubic oracle.

The oracle follows the definition of bicubic resampling (Keys' cubic
convolution kernel with a = -0.75, half-pixel centres, edge samples
repeated) in float64 loops and shares no code with torch's kernel.
"""

import math

import pytest
import torch

from mmssl.checkpoint.layouts import resize_pos_embed, square_grid
from mmssl.models.backbones import DINOVisionTransformer

A = -0.75


def _kernel(x: float) -> float:
    x = abs(x)
    if x <= 1:
        return ((A + 2) * x - (A + 3)) * x * x + 1
    if x < 2:
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return 0.0


def _resize_1d(values, out_len, scale):
    """``values[i]`` sampled at output pixel centres; ``scale`` = in/out."""
    n = len(values)
    out = []
    for i in range(out_len):
        x = (i + 0.5) * scale - 0.5
        left = math.floor(x)
        total = 0.0
        for k in range(left - 1, left + 3):
            total += _kernel(x - k) * values[min(max(k, 0), n - 1)]
        out.append(total)
    return out


def _oracle(pos, src, dst, scales=None):
    """(1, 1 + Hs*Ws, C) -> (1, 1 + Hd*Wd, C), float64 loops."""
    (hs, ws), (hd, wd) = src, dst
    sh, sw = scales or (hs / hd, ws / wd)
    grid = pos[0, 1:].double().reshape(hs, ws, -1).tolist()
    chans = len(grid[0][0])
    # along W for every source row, then along H for every column
    rows = [
        [
            _resize_1d([grid[r][c][ch] for c in range(ws)], wd, sw)
            for ch in range(chans)
        ]
        for r in range(hs)
    ]  # rows[r][ch][x]
    out = torch.zeros(hd, wd, chans, dtype=torch.float64)
    for x in range(wd):
        for ch in range(chans):
            col = _resize_1d([rows[r][ch][x] for r in range(hs)], hd, sh)
            out[:, x, ch] = torch.tensor(col)
    return torch.cat([pos[0, :1].double(), out.reshape(hd * wd, chans)])


def test_resize_matches_bicubic_oracle():
    g = torch.Generator().manual_seed(0)
    pos = torch.randn(1, 1 + 4 * 4, 3, generator=g)
    out = resize_pos_embed(pos, (6, 5))
    assert out.shape == (1, 1 + 30, 3) and out.dtype == pos.dtype
    assert torch.equal(out[:, 0], pos[:, 0])  # class token untouched
    torch.testing.assert_close(
        out[0].double(), _oracle(pos, (4, 4), (6, 5)), atol=1e-5, rtol=0
    )
    assert resize_pos_embed(pos, (4, 4)) is pos


def test_offset_resize_as_dinov2_hub_models():
    """``scale_factor=(dst + 0.1) / src``: samples at src/(dst + 0.1)."""
    g = torch.Generator().manual_seed(1)
    pos = torch.randn(1, 1 + 5 * 5, 2, generator=g)
    out = resize_pos_embed(pos, (3, 3), offset=0.1)
    scale = 1 / ((3 + 0.1) / 5)
    ref = _oracle(pos, (5, 5), (3, 3), scales=(scale, scale))
    torch.testing.assert_close(out[0].double(), ref, atol=1e-5, rtol=0)
    # the offset changes the sampling positions, so the values
    assert (out - resize_pos_embed(pos, (3, 3))).abs().max() > 1e-3
    with pytest.raises(RuntimeError, match='interpolate_offset=0'):
        resize_pos_embed(pos, (2, 2), offset=1.5)  # rounds to 3x3


def test_checkpoint_grid_resized_at_load():
    """A 518-px DINOv2 grid (37x37) loaded into a 224-px model (16x16)."""
    model = DINOVisionTransformer(
        arch=dict(embed_dims=4, num_layers=1, num_heads=1),
        img_size=224,
        patch_size=14,
    )
    g = torch.Generator().manual_seed(2)
    state = {
        k: torch.randn(v.shape, generator=g)
        for k, v in model.state_dict().items()
    }
    state['pos_embed'] = torch.randn(1, 1 + 37 * 37, 4, generator=g)
    model.load_state_dict(state)
    ref = _oracle(state['pos_embed'], (37, 37), (16, 16))
    torch.testing.assert_close(
        model.pos_embed[0].detach().double(), ref, atol=1e-5, rtol=0
    )


def test_grid_errors():
    assert square_grid(49) == (7, 7)
    with pytest.raises(ValueError, match='not a square'):
        square_grid(50)
    with pytest.raises(ValueError, match='not 3x3'):
        resize_pos_embed(torch.zeros(1, 1 + 8, 2), (2, 2), src_grid=(3, 3))
