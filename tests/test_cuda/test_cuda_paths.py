"""The GPU paths of issue 14, on a real CUDA device (skipped without one).

CI has no GPU; these run wherever ``torch.cuda.is_available()``, e.g.
``python -m pytest -n 0 tests/test_cuda``. Each compares the CUDA result
with an independent one: the same step on the CPU (fp32, TF32 off), the
per-size path for token packing, eager for inductor-compiled blocks, fp32
for bf16 autocast, and a plain module for FSDP2 on one NCCL rank.
"""

import copy
import os.path as osp

import pytest
import torch
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

# logged with the loss terms, not summed (UniformCollapseHook)
DINO_LOGGED = {'dino_target_entropy', 'dino_student_entropy'}

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason='needs a CUDA device'
)

K = 16
ARCH = dict(embed_dims=64, num_layers=2, num_heads=2, feedforward_channels=96)


@pytest.fixture(autouse=True)
def _exact_fp32():
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    old = matmul.allow_tf32, cudnn.allow_tf32
    matmul.allow_tf32 = cudnn.allow_tf32 = False
    yield
    matmul.allow_tf32, cudnn.allow_tf32 = old


def _family(kind='v2', koleo=0.1, **kw):
    register_all_modules()
    if kind == 'v2':
        vit = dict(type='DINOVisionTransformer', img_size=32)
    else:
        # No random RoPE rescale in training: it draws from the device's
        # RNG, and CPU and CUDA draw different numbers from one seed.
        vit = dict(type='DINOv3ViT', rope_rescale_coords=None)
    vit.update(arch=ARCH, patch_size=8, out_type='raw', num_register_tokens=1)
    cfg = dict(
        type='DINOFamily',
        backbone=vit,
        head=dict(
            type='DINOHead',
            in_channels=64,
            n_prototypes=K,
            hidden_channels=64,
            bottleneck_channels=16,
        ),
        terms=dict(
            dino_cls=dict(type='DINOLoss', out_dim=K),
            ibot_patch=dict(type='iBOTPatchLoss', out_dim=K),
            koleo=dict(type='KoLeoLoss', weight=koleo),
        ),
        **kw,
    )
    torch.manual_seed(0)
    model = MODELS.build(cfg)
    model.init_weights()
    # At the default init every image gets nearly the same CLS token, and
    # the Sinkhorn targets and KoLeo's nearest-neighbour logs turn a 1e-6
    # change of the weights into a change of several % of the losses: CPU
    # and CUDA (or eager and compiled) rounding could not be compared.
    # Larger weights make the images' outputs differ visibly.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'gamma' in name:
                p.uniform_(0.5, 1.0)
            elif p.dim() > 1 or 'token' in name:
                p.normal_(0.0, 0.2)
    # near-one-hot targets would flip between near-tied prototypes
    model.teacher_temp = 1.0
    return model.train()


def _batch(device, batch=4):
    gen = torch.Generator().manual_seed(0)
    sides = [32, 32, 16, 16, 24]
    views = [torch.randn(batch, 3, s, s, generator=gen) for s in sides]
    samples = []
    for _ in range(batch):
        mask = torch.rand(2, 4, 4, generator=gen) < 0.4
        samples.append(DataSample().set_mask(mask.to(device)))
    return [v.to(device) for v in views], samples


def _losses_and_grads(model, device, amp=False):
    model.zero_grad()
    views, samples = _batch(device)
    torch.manual_seed(3)
    ctx = torch.autocast('cuda', dtype=torch.bfloat16, enabled=amp)
    with ctx:
        losses = model.loss(views, samples)
    sum(losses.values()).backward()
    grads = {
        n: p.grad.detach().float().cpu()
        for n, p in model.named_parameters()
        if p.grad is not None
    }
    return {k: v.detach().float().cpu() for k, v in losses.items()}, grads


@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_dino_family_step_on_cuda_equals_cpu(kind):
    cpu = _family(kind)
    gpu = copy.deepcopy(cpu).cuda()
    want_l, want_g = _losses_and_grads(cpu, 'cpu')
    got_l, got_g = _losses_and_grads(gpu, 'cuda')
    assert (
        set(got_l)
        == {'loss_dino_cls', 'loss_ibot_patch', 'loss_koleo'} | DINO_LOGGED
    )
    for k in want_l:
        torch.testing.assert_close(got_l[k], want_l[k], rtol=1e-4, atol=1e-5)
    assert set(got_g) == set(want_g)
    for n in want_g:
        torch.testing.assert_close(got_g[n], want_g[n], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize('kind', ['v2', 'v3'])
def test_token_packing_on_cuda_equals_per_size(kind):
    per_size = _family(kind).cuda()
    per_size.pack_crops = False  # 'auto' packs on a GPU
    packed = copy.deepcopy(per_size)
    packed.pack_crops = True
    assert packed.packs(torch.zeros(1, device='cuda'))
    assert not per_size.packs(torch.zeros(1, device='cuda'))
    want_l, want_g = _losses_and_grads(per_size, 'cuda')
    got_l, got_g = _losses_and_grads(packed, 'cuda')
    for k in want_l:
        torch.testing.assert_close(got_l[k], want_l[k], rtol=1e-4, atol=1e-5)
    for n in want_g:
        torch.testing.assert_close(got_g[n], want_g[n], rtol=1e-3, atol=1e-5)


def test_bf16_autocast_step_close_to_fp32():
    # KoLeo is left out: at random init the CLS features of different
    # images nearly coincide, and bf16 rounding moves their tiny nearest-
    # neighbour distances (and so the log's gradients) by large factors
    model = _family('v2', koleo=0.0).cuda()
    want_l, want_g = _losses_and_grads(model, 'cuda')
    got_l, got_g = _losses_and_grads(model, 'cuda', amp=True)
    for k in want_l:  # bf16 has 8 bits of mantissa: about 1 % per value
        torch.testing.assert_close(got_l[k], want_l[k], rtol=3e-2, atol=3e-2)
    total = torch.cat([g.flatten() for g in want_g.values()])
    diff = torch.cat([(got_g[n] - g).flatten() for n, g in want_g.items()])
    assert torch.isfinite(diff).all()
    assert diff.norm() / total.norm() < 0.1


def test_inductor_compiled_blocks_equal_eager():
    from mmssl.models.backbones import DINOVisionTransformer

    torch._dynamo.reset()
    kw = dict(arch=ARCH, img_size=32, patch_size=8, out_type='raw')
    torch.manual_seed(0)
    eager = DINOVisionTransformer(**kw).cuda()
    compiled = DINOVisionTransformer(
        compile_blocks=dict(backend='inductor'), **kw
    ).cuda()
    compiled.load_state_dict(eager.state_dict())
    x = torch.randn(8, 3, 32, 32, device='cuda')
    outs = []
    for model in (eager, compiled):
        out = model(x)[0]
        out.square().mean().backward()
        outs.append((out.detach(), model.layers[0].ln1.weight.grad.clone()))
    torch.testing.assert_close(outs[1][0], outs[0][0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(outs[1][1], outs[0][1], rtol=1e-3, atol=1e-5)


def test_fully_shard_and_dcp_on_one_nccl_rank(tmp_path):
    """FSDP2 on one NCCL rank: one SGD step equals the plain module's, and
    a DCP folder written from CUDA shards loads back bit-equal."""
    import torch.distributed as dist

    from mmssl.checkpoint.sharded import (
        load_sharded,
        save_sharded,
        training_state,
    )
    from mmssl.models.wrappers import MMFullyShard

    if not dist.is_initialized():
        path = osp.join(str(tmp_path), 'init')
        dist.init_process_group(
            'nccl', init_method=f'file://{path}', rank=0, world_size=1
        )
    try:
        plain = _family('v2').cuda()
        sharded = MMFullyShard(copy.deepcopy(plain))
        for model in (plain, sharded):
            module = getattr(model, 'module', model)
            opt = torch.optim.SGD(module.parameters(), lr=0.5)
            views, samples = _batch('cuda')
            torch.manual_seed(3)  # through forward: FSDP2's gather hooks
            losses = model(views, samples, mode='loss')
            sum(losses.values()).backward()
            opt.step()
        for (n, p), q in zip(
            plain.named_parameters(), sharded.module.parameters()
        ):
            torch.testing.assert_close(
                q.full_tensor(), p.detach(), rtol=1e-4, atol=1e-6, msg=n
            )
        folder = osp.join(str(tmp_path), 'iter_1')
        save_sharded(training_state(sharded.module), folder)
        assert osp.isfile(osp.join(folder, '.metadata'))
        fresh = MMFullyShard(_family('v2').cuda())
        load_sharded(folder, fresh.module)
        pairs = zip(sharded.module.parameters(), fresh.module.parameters())
        for p, q in pairs:
            assert torch.equal(p.full_tensor(), q.full_tensor())
    finally:
        dist.destroy_process_group()


def _attention_ops(fn):
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU]
    ) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.key for e in prof.key_averages() if 'attention' in e.key}


def test_drop_path_subset_attention_needs_no_cudnn_plans():
    # cuDNN attention builds a plan per new batch size (~12 ms of host time
    # each); a random kept subset has a new size at almost every call, which
    # made bf16 drop path 0.4 ten times slower on an H200.
    import torch.nn.functional as F

    from tests.support.steps import drop_add_residual

    def branch(t):  # (B, T, 64) -> attention over T with 4 heads
        q = t.unflatten(-1, (4, 16)).transpose(1, 2)
        return (
            F.scaled_dot_product_attention(q, q, q).transpose(1, 2).flatten(2)
        )

    x = torch.randn(16, 197, 64, device='cuda', requires_grad=True)
    gen = torch.Generator(device='cuda').manual_seed(0)

    def subset():
        with torch.autocast('cuda', dtype=torch.bfloat16):
            out = drop_add_residual(x, branch, 0.5, True, generator=gen)
        out.float().sum().backward()

    def plain():  # the same kind of call outside drop path
        with torch.autocast('cuda', dtype=torch.bfloat16):
            out = branch(x[:7])
        out.float().sum().backward()

    if not any('cudnn' in k for k in _attention_ops(plain)):
        pytest.skip('this torch/GPU does not pick cuDNN attention here')
    ops = _attention_ops(subset)
    assert ops, 'no attention ran'
    assert not any('cudnn' in k for k in ops), ops
