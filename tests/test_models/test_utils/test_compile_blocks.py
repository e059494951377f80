"""``compile_blocks``: each ViT block compiled, outputs and parameter
names those of the eager model. Uses ``backend='aot_eager'`` (traces
with dynamo and AOTAutograd, no C++ build): inductor works here too but
needs tens of seconds of compiling on a 2-core machine."""

import pytest
import torch

from mmssl.models.backbones import (
    DINOv3ViT,
    DINOVisionTransformer,
)

ARCH = dict(embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=32)
COMPILE = dict(backend='aot_eager')


def _pair(cls, **kw):
    torch.manual_seed(0)
    eager = cls(arch=ARCH, patch_size=8, **kw)
    torch.manual_seed(0)
    compiled = cls(arch=ARCH, patch_size=8, compile_blocks=COMPILE, **kw)
    compiled.load_state_dict(eager.state_dict())
    return eager, compiled


@pytest.mark.slow
@pytest.mark.parametrize(
    'cls,kw',
    [
        (DINOVisionTransformer, dict(img_size=16, drop_path_rate=0.5)),
        (DINOv3ViT, dict(drop_path_rate=0.5)),
    ],
)
def test_compiled_blocks_equal_eager(cls, kw):
    torch._dynamo.reset()
    eager, compiled = _pair(cls, **kw)
    assert all(
        layer._compiled_call_impl is not None for layer in compiled.layers
    )
    assert list(compiled.state_dict()) == list(eager.state_dict())
    x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    # drop path on: per-sample dropping changes the kept batch size
    for seed in range(3):
        outs = []
        for model in (eager, compiled):
            torch.manual_seed(seed)
            model.train()
            out = model(x)[0]
            out.sum().backward()
            outs.append(
                (
                    out.detach(),
                    model.layers[0].ln1.weight.grad
                    if hasattr(model.layers[0], 'ln1')
                    else next(model.layers[0].parameters()).grad,
                )
            )
            model.zero_grad()
        torch.testing.assert_close(outs[1][0], outs[0][0])
        torch.testing.assert_close(outs[1][1], outs[0][1])
