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


def _is_compiled(layer):
    # nn.Module.compile: the whole block's forward
    return layer._compiled_call_impl is not None


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
    assert all(_is_compiled(layer) for layer in compiled.layers)
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


@pytest.mark.slow
@pytest.mark.parametrize(
    'cls,kw,with_cp',
    [
        (DINOVisionTransformer, dict(img_size=16, drop_path_rate=0.5), True),
        (DINOv3ViT, dict(drop_path_rate=0.5), 'selective'),
    ],
)
def test_compiled_and_checkpointed_blocks_equal_eager(cls, kw, with_cp):
    # Compiled blocks under activation checkpointing (the combination a
    # large run uses): the recomputation replays each block's drop-path
    # draws, so outputs and gradients are those of the plain eager model.
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = cls(arch=ARCH, patch_size=8, **kw)
    both = cls(
        arch=ARCH, patch_size=8, compile_blocks=COMPILE, with_cp=with_cp, **kw
    )
    both.load_state_dict(eager.state_dict())
    x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    for seed in range(3):
        results = []
        for model in (eager, both):
            torch.manual_seed(seed)
            out = model.train()(x)[0]
            _readout([out]).backward()
            grads = [p.grad.clone() for p in model.layers.parameters()]
            results.append([out.detach()] + grads)
            model.zero_grad()
        for want, got in zip(*results):
            torch.testing.assert_close(got, want)


class CountingBackend:
    """A ``torch.compile`` backend that runs the captured graphs eagerly
    and counts how often each one runs."""

    def __init__(self):
        self.graphs, self.runs = 0, 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1

        def run(*args):
            self.runs += 1
            return gm.forward(*args)

        return run


def _readout(outs):
    gen = torch.Generator().manual_seed(3)
    return sum((o * torch.randn(o.shape, generator=gen)).sum() for o in outs)


@pytest.mark.parametrize(
    'cls,packed',
    [
        (DINOVisionTransformer, False),
        (DINOVisionTransformer, True),
        pytest.param(DINOv3ViT, True, marks=pytest.mark.slow),
    ],
)
def test_compiled_blocks_two_crop_sizes_and_packing(cls, packed):
    # Two crop sizes with drop path. Whole blocks compiled (DINOv2's
    # with static-shaped stochastic depth), one graph per block call,
    # packed or not; the DINOv3 packed path runs the same block.
    torch._dynamo.reset()
    backend = CountingBackend()
    kw = dict(drop_path_rate=0.5, out_type='raw')
    if cls is DINOVisionTransformer:
        kw.update(img_size=16, drop_path_mode='static')
    else:
        kw['rope_rescale_coords'] = None  # no RoPE draws from the RNG
    torch.manual_seed(0)
    eager = cls(arch=ARCH, patch_size=8, **kw)
    compiled = cls(
        arch=ARCH, patch_size=8, compile_blocks=dict(backend=backend), **kw
    )
    compiled.load_state_dict(eager.state_dict())
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(4, 3, 16, 16, generator=gen)]
    xs.append(torch.randn(6, 3, 8, 8, generator=gen))
    for seed in range(3):
        results = []
        for model in (eager, compiled):
            model.train().zero_grad()
            gens = [torch.Generator().manual_seed(seed + g) for g in (0, 9)]
            if packed:
                outs = [o[0] for o in model.forward_packed(xs, None, gens)]
            else:
                outs = []
                for x, g in zip(xs, gens):
                    torch.manual_seed(g.initial_seed())
                    outs.append(model(x)[0])
            _readout(outs).backward()
            grads = [p.grad.clone() for p in model.layers.parameters()]
            results.append(([o.detach() for o in outs], grads))
        for want, got in zip(*(r[0] + r[1] for r in results)):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # every block call ran one captured graph:
    # 2 layers x (1 packed call or 2 crop sizes) x 3 steps
    assert backend.graphs >= 2
    assert backend.runs == 2 * (1 if packed else 2) * 3


class CountingAOTEager(CountingBackend):
    """``backend='aot_eager'`` (dynamo + AOTAutograd), counting graphs
    and runs, also of the deep-copied (teacher) blocks."""

    def __deepcopy__(self, memo):
        return self

    def __call__(self, gm, example_inputs):
        from torch._dynamo.backends.registry import lookup_backend

        self.graphs += 1
        compiled = lookup_backend('aot_eager')(gm, example_inputs)

        def run(*args):
            self.runs += 1
            return compiled(*args)

        return run


@pytest.mark.parametrize(
    'pack_crops', [pytest.param(False, marks=pytest.mark.slow), True]
)
def test_dinov2_steps_do_not_recompile_after_warm_up(pack_crops):
    """Compiled whole blocks, static drop path 0.4, fresh iBOT masks per
    step: after 2 warm-up steps (two crop sizes, student and teacher),
    6 more train steps compile nothing new and every block call runs a
    captured graph."""
    from mmpretrain.structures import DataSample

    from mmssl.registry import MODELS

    torch._dynamo.reset()
    backend = CountingAOTEager()
    K, L = 16, 3
    vit = dict(
        type='DINOVisionTransformer',
        arch=dict(ARCH, num_layers=L),
        img_size=32,
        patch_size=8,
        out_type='raw',
        drop_path_rate=0.4,
        drop_path_mode='static',
        compile_blocks=dict(backend=backend),
    )
    head = dict(
        type='DINOHead',
        in_channels=16,
        n_prototypes=K,
        hidden_channels=16,
        bottleneck_channels=8,
    )
    terms = dict(
        dino_cls=dict(type='DINOLoss', out_dim=K),
        ibot_patch=dict(type='iBOTPatchLoss', out_dim=K),
    )
    torch.manual_seed(0)
    model = MODELS.build(
        dict(
            type='DINOFamily',
            backbone=vit,
            head=head,
            terms=terms,
            pack_crops=pack_crops,
        )
    ).train()
    gen = torch.Generator().manual_seed(0)

    def step():
        views = [torch.randn(4, 3, s, s, generator=gen) for s in (32, 32)]
        views += [torch.randn(4, 3, 16, 16, generator=gen) for _ in '12']
        masks = torch.rand(4, 2, 4, 4, generator=gen) < 0.4
        samples = [DataSample().set_mask(m) for m in masks]
        model.zero_grad()
        sum(model.loss(views, samples).values()).backward()

    for _ in range(2):
        step()
    graphs, runs = backend.graphs, backend.runs
    assert graphs >= 2
    for _ in range(6):
        step()
    assert backend.graphs == graphs  # no recompile
    # per step: student global + local (or one packed call), teacher
    calls = (1 if pack_crops else 2) + 1
    assert backend.runs - runs == 6 * L * calls
