"""mae_visualization: the picture, and the reconstruction maths."""

import glob
import os.path as osp

import cv2
import pytest
import torch

from mmssl.apis import init_model
from mmssl.visualization.mim_reconstruction import (
    _patchify,
    mim_reconstruct,
    mim_style,
)
from tests.support.tools import load_tool, tiny_config


def test_mae_norm_pix_unnormalised_with_patch_stats():
    model = init_model(tiny_config('mae_tiny'))
    x = torch.randn(2, 3, 32, 32)
    # a decoder predicting 0 means "the patch mean" under norm_pix targets
    model.neck.forward = lambda latent, ids: torch.zeros(2, 64, 48)
    out = mim_reconstruct(model, x, mask_ratio=0.75, seed=1)
    mask = out['mask']
    assert mask.shape == (2, 1, 32, 32)
    assert mask.mean().item() == pytest.approx(0.75)
    rec = _patchify(out['reconstruction'], 4)  # (2, 64, 48)
    mean = _patchify(x, 4).mean(-1, keepdim=True).expand_as(rec)
    assert torch.allclose(rec, mean, atol=1e-6)
    # visible patches come from the original, hidden ones from the model
    vis = 1 - mask
    assert torch.allclose(out['pasted'] * vis, x * vis)
    assert torch.allclose(out['pasted'] * mask, out['reconstruction'] * mask)
    assert torch.equal(out['masked'] * mask, torch.zeros_like(x))


def test_seed_fixes_mask():
    model = init_model(tiny_config('mae_tiny'))
    x = torch.randn(1, 3, 32, 32)
    a = mim_reconstruct(model, x, seed=3)['mask']
    b = mim_reconstruct(model, x, seed=3)['mask']
    c = mim_reconstruct(model, x, seed=4)['mask']
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_simmim_mask_and_style():
    model = init_model(tiny_config('simmim_tiny'))
    assert mim_style(model) == 'simmim'
    out = mim_reconstruct(
        model, torch.randn(1, 3, 32, 32), mask_ratio=0.5, mask_patch_size=8
    )
    # 4x4 squares of 8 px, half of them hidden
    assert out['mask'].mean().item() == pytest.approx(0.5)
    assert out['reconstruction'].shape == (1, 3, 32, 32)
    with pytest.raises(TypeError, match='MAE- or SimMIM'):
        mim_style(init_model(tiny_config('simclr_tiny')))


@pytest.mark.parametrize('name', ['mae_tiny', 'simmim_tiny'])
def test_cli_writes_png(name, demo_data_root, tmp_path):
    img = sorted(glob.glob(osp.join(demo_data_root, 'val', '3', '*')))[0]
    tool = load_tool('misc/mae_visualization.py')
    out = tool.main(
        [
            img,
            tiny_config(name),
            'none',
            str(tmp_path / 'vis.png'),
            '--device',
            'cpu',
            '--mask-ratio',
            '0.5',
            '--seed',
            '0',
        ]
    )
    pic = cv2.imread(out)
    assert pic is not None and pic.shape == (290, 1000, 3)
