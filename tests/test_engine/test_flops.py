"""Model FLOPs of a DINO-family step (mmssl.engine.flops), for MFU."""

import pytest
import torch
import torch.nn.functional as F
from mmengine.config import Config
from torch.utils.flop_counter import FlopCounterMode

from mmssl.datasets.block_mask_collate import batch_mask_bound
from mmssl.engine.flops import (
    dino_step_flops,
    head_forward_flops,
    peak_tflops,
    vit_forward_flops,
)
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


def _counted_attention_flops(heads: int, tokens: int, dims: int) -> int:
    """What this torch's FlopCounterMode counts for one attention call.

    torch 2.14 has no count for the CPU kernel of
    ``scaled_dot_product_attention`` (0); torch 2.15 counts its two
    matmuls, scores and weighted values: 4 T^2 C.
    """
    q = torch.randn(1, heads, tokens, dims // heads)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        F.scaled_dot_product_attention(q, q, q)
    return counter.get_total_flops()


def test_vit_matmuls_match_torch_flop_counter():
    """The hand count, and torch's counter on the same ViT: equal up to the
    attention matmuls torch may not count on this version."""
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
    # 16 patches of 3x8x8 = 192 inputs, width C = 32, FFN 48, 2 blocks;
    # T = 16 + CLS + 2 registers = 19 tokens
    t, c = 19, 32
    embed = 2 * 16 * 192 * c
    dense = 2 * t * (4 * c * c + 2 * c * 48)  # qkv, proj, FFN
    attention = 4 * t * t * c  # scores and weighted values
    ours = vit_forward_flops(16, c, 2, 48, 3, 3 * 64)
    assert ours == embed + 2 * (dense + attention)

    counted = _counted_attention_flops(2, t, c)
    assert counted in (0, attention), counted
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        vit(torch.randn(1, 3, 32, 32))
    assert counter.get_total_flops() == embed + 2 * (dense + counted)


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
