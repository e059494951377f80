"""Under bf16 autocast the ViTs' residual stream stays in the parameters'
dtype (float32), as in the reference DINOv2, where ``torch.cat`` with the
float32 CLS token promotes the bf16 patch embedding. A bf16 stream sums
every block's residual in 8-bit-mantissa arithmetic, and on CUDA its
drop-path backward (index_add of bf16 rows) ran 8x slower than float32."""

import pytest
import torch

from mmssl.models.backbones import DINOv3ViT, DINOVisionTransformer

ARCH = dict(embed_dims=32, num_layers=2, num_heads=2, feedforward_channels=48)


@pytest.mark.parametrize('cls', [DINOVisionTransformer, DINOv3ViT])
def test_residual_stream_is_float32_under_bf16_autocast(cls):
    kw = dict(img_size=32) if cls is DINOVisionTransformer else {}
    model = cls(arch=ARCH, patch_size=8, drop_path_rate=0.3, **kw).train()
    seen = []
    for layer in model.layers:
        layer.register_forward_pre_hook(
            lambda mod, args: seen.append(args[0].dtype)
        )
    x = torch.randn(4, 3, 32, 32)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        tokens, _ = model.prepare_tokens(x)
        out = model(x)
    assert tokens.dtype == torch.float32
    assert seen == [torch.float32] * len(model.layers)
    out[0].float().sum().backward()
    assert model.cls_token.grad is not None
    assert model.cls_token.grad.dtype == torch.float32


def test_bf16_parameters_keep_a_bf16_stream():
    """With bf16 parameters (FSDP2's param_dtype) the stream follows them."""
    model = DINOVisionTransformer(arch=ARCH, img_size=32, patch_size=8)
    model = model.to(torch.bfloat16)
    tokens, _ = model.prepare_tokens(torch.randn(2, 3, 32, 32).bfloat16())
    assert tokens.dtype == torch.bfloat16
