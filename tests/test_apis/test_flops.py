"""Model FLOPs of a DINO-family step (mmssl.apis.flops), for MFU."""

import pytest
import torch
from mmengine.config import Config
from torch.utils.flop_counter import FlopCounterMode

from mmssl.apis.flops import (
    dino_step_flops,
    head_forward_flops,
    peak_tflops,
    vit_forward_flops,
)
from mmssl.datasets.block_mask_collate import batch_mask_bound
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

DEMO = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'


def test_tiny_vit_by_hand():
    # 4 patches of 3x4x4 = 48 inputs, width 8, 2 blocks, FFN 16, + CLS:
    # embed 2*4*48*8 = 3072; per block with T = 5 tokens:
    # 2*5*(4*64 + 2*8*16) = 5120 (qkv, proj, FFN) + 4*25*8 = 800 (attn)
    assert vit_forward_flops(4, 8, 2, 16, 1, 48) == 3072 + 2 * 5920
    # SwiGLU: three C x F projections instead of two
    assert vit_forward_flops(4, 8, 1, 16, 1, 48, swiglu=True) == (
        3072 + 2 * 5 * (4 * 64 + 3 * 8 * 16) + 800
    )
    # head rows: 8 -> 32 -> 32 -> 4 -> 10 prototypes
    assert head_forward_flops(8, 10, 32, 4, 3) == 2 * (
        8 * 32 + 32 * 32 + 32 * 4 + 4 * 10
    )


def test_vit_matmuls_match_torch_flop_counter():
    """Linear layers and patch embedding as torch counts them (its CPU
    attention kernel has no count: the 4 T^2 C per block is by hand)."""
    register_all_modules()
    vit = MODELS.build(
        dict(
            type='DINOVisionTransformer',
            arch=dict(
                embed_dims=32,
                num_layers=2,
                num_heads=2,
                feedforward_channels=48,
            ),
            img_size=32,
            patch_size=8,
            num_register_tokens=2,
            out_type='raw',
        )
    )
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        vit(torch.randn(1, 3, 32, 32))
    ours = vit_forward_flops(16, 32, 2, 48, 3, 3 * 64)
    assert counter.get_total_flops() == ours - 2 * 4 * 19**2 * 32


def test_step_flops_of_the_demo_config():
    register_all_modules()
    cfg = Config.fromfile(DEMO)
    f = dino_step_flops(cfg)
    assert f.crops == '2x32 + 4x16'

    def fwd(n):  # 4x4 patches of the 64-wide, 4-block demo ViT
        return vit_forward_flops(n, 64, 4, 256, 1, 48)

    assert f.student == 3 * (2 * fwd(64) + 4 * fwd(16))
    assert f.teacher == 2 * fwd(64)
    masked = batch_mask_bound(2 * 64, (64, 1), (0.1, 0.5), 0.5) / 64
    assert f.masked_per_image == masked
    row = head_forward_flops(64, 256, 256, 64, 3)
    assert f.heads == round(3 * 6 * row + 2 * row + 4 * masked * row)
    assert f.total == f.student + f.teacher + f.heads


def test_vit_s14_step_is_the_issue_figure():
    """DINOv2 ViT-S/14 with 2x224 + 8x98 crops: about 166 GFLOP/image."""
    register_all_modules()
    cfg = Config.fromfile('configs/dinov2/dinov2_vit-s14_8xb128-100e_in1k.py')
    cfg.train_dataloader.batch_size = 32
    (crop,) = [
        t
        for t in cfg.train_dataloader.dataset.pipeline
        if t['type'] == 'MultiCrop'
    ]
    crop['local_size'] = 98
    assert dino_step_flops(cfg).total / 1e9 == pytest.approx(166, abs=1)


def test_peaks():
    assert peak_tflops('NVIDIA H200') == 989.4
    assert peak_tflops('NVIDIA A100-SXM4-80GB', bf16=False) == 156.0
    assert peak_tflops('Some GPU') is None
