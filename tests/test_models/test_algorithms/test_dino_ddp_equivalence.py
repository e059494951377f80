"""DDP semantics of the DINO family: one training step on 2 gloo ranks with
B images each gives the gradients and loss centres of one process with the
same 2B images.

Every loss term is a per-image mean (DINO: over pairs, iBOT: each crop's
mean over its masked patches divided by the number of crops), so DDP's
gradient averaging over equal rank batches equals the single-process mean;
the teacher centre (EMA of the batch mean) and the Sinkhorn-Knopp sums are
all-reduced, so the targets must be those of the whole batch. KoLeo is
per-rank by design (as in DINOv2) and weighted 0 here.
"""

import os.path as osp

import pytest
import torch
from mmpretrain.structures import DataSample

from tests.support.dist import file_init_method, init_gloo, spawn

K = 16
B = 3  # images per rank
WORLD = 2
ALGOS = ('DINO', 'iBOT', 'DINOv2')


def _cfg(algo):
    cfg = dict(
        type=algo,
        backbone=dict(
            type='DINOVisionTransformer',
            arch=dict(
                embed_dims=32,
                num_layers=2,
                num_heads=2,
                feedforward_channels=64,
            ),
            img_size=32,
            patch_size=8,
            out_type='raw',
            drop_path_rate=0.0,
            # Xavier: with trunc-normal(0.02) a tiny ViT's CLS output is
            # almost the same for every image, and a centre computed from
            # one rank's images would pass for the whole batch's
            init_cfg=[dict(type='Xavier', layer='Linear')],
        ),
        head=dict(
            type='DINOHead',
            in_channels=32,
            n_prototypes=K,
            hidden_channels=32,
            bottleneck_channels=8,
        ),
        loss=dict(type='DINOLoss', out_dim=K),
        data_preprocessor=dict(
            type='SelfSupDataPreprocessor', mean=[0, 0, 0], std=[1, 1, 1]
        ),
    )
    if algo in ('iBOT', 'DINOv2'):
        cfg['ibot_loss'] = dict(type='iBOTPatchLoss', out_dim=K)
    if algo == 'DINOv2':
        cfg['loss']['centering'] = 'sinkhorn_knopp'
        cfg['ibot_loss']['centering'] = 'sinkhorn_knopp'
        cfg['loss_weights'] = dict(dino=1.0, ibot=1.0, koleo=0.0)
    return cfg


def _batch():
    """2 global + 2 local views of WORLD * B images, and their masks."""
    gen = torch.Generator().manual_seed(0)
    n = WORLD * B
    views = [torch.randn(n, 3, 32, 32, generator=gen) for _ in range(2)]
    views += [torch.randn(n, 3, 16, 16, generator=gen) for _ in range(2)]
    masks = torch.rand(n, 2, 4, 4, generator=gen) < 0.4
    masks[0] = False  # an image without any masked patch
    return views, masks


def _step(model, views, masks, lo, hi):
    """Loss of images lo:hi, backward; returns the total loss."""
    samples = [DataSample().set_mask(masks[i]) for i in range(lo, hi)]
    inputs = [v[lo:hi] for v in views]
    losses = model(inputs, samples, mode='loss')
    total = sum(v for k, v in losses.items() if k.startswith('loss'))
    total.backward()
    return float(total)


def _build(algo):
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(0)
    model = MODELS.build(_cfg(algo))
    model.init_weights()
    model.train()
    return model


def _state(model, loss):
    module = getattr(model, 'module', model)
    return dict(
        loss=loss,
        grads={
            n: p.grad.detach().clone()
            for n, p in module.named_parameters()
            if p.grad is not None
        },
        buffers={
            n: b.detach().clone()
            for n, b in module.named_buffers()
            if n.endswith('center')
        },
    )


def _worker(rank, init_method, out_dir):
    init_gloo(rank, WORLD, init_method)
    from mmengine.model import MMDistributedDataParallel

    views, masks = _batch()
    for algo in ALGOS:
        model = MMDistributedDataParallel(
            _build(algo), device_ids=None, find_unused_parameters=True
        )
        loss = _step(model, views, masks, rank * B, (rank + 1) * B)
        state = _state(model, loss)
        # the loss of the whole batch is the mean of the rank losses
        total = torch.tensor([loss])
        torch.distributed.all_reduce(total)
        state['loss'] = float(total) / WORLD
        if rank == 0:
            torch.save(state, osp.join(out_dir, f'{algo}.pth'))
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_two_ranks_equal_one_process_with_the_whole_batch(tmp_path):
    spawn(_worker, file_init_method(tmp_path), str(tmp_path), nprocs=WORLD)
    views, masks = _batch()
    for algo in ALGOS:
        ref = _state(
            model := _build(algo), _step(model, views, masks, 0, WORLD * B)
        )
        ddp = torch.load(tmp_path / f'{algo}.pth')
        assert abs(ddp['loss'] - ref['loss']) < 1e-5, (algo, ddp, ref)
        assert ref['grads'].keys() == ddp['grads'].keys(), algo
        assert ref['buffers'], algo
        for name, grad in ref['grads'].items():
            torch.testing.assert_close(
                ddp['grads'][name],
                grad,
                rtol=1e-4,
                atol=1e-6,
                msg=f'{algo}: {name}',
            )
        for name, buf in ref['buffers'].items():
            # the centre moves by 0.1 x the batch mean of logits that differ
            # little between images: a one-rank centre is off by ~4e-6,
            # the all-reduced one by ~1e-8
            torch.testing.assert_close(
                ddp['buffers'][name],
                buf,
                rtol=0,
                atol=1e-7,
                msg=f'{algo}: {name}',
            )
