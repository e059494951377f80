"""Activation checkpointing under DDP: two CPU gloo ranks with
``with_cp=True``, each on half the batch and with two forwards per step
(multi-crop), give the gradients of one process without checkpointing on
the whole batch, for both 3D backbones and the 2D DINO ViT."""

import copy
import json

import pytest
import torch

from tests.support.dist import file_init_method, init_gloo, spawn

BATCH = 4  # split 2 + 2 over the ranks


def _models():
    from mmssl.models.backbones import (
        DINOVisionTransformer,
        SwinViT3D,
        VisionTransformer3D,
    )

    tiny = dict(embed_dims=16, num_layers=2, num_heads=2)
    return {
        'swin_vit3d': (
            SwinViT3D(
                feature_size=12,
                depths=(1, 1, 1, 1),
                num_heads=(1, 1, 2, 2),
                normalize=False,
            ),
            [(1, 32, 32, 32), (1, 32, 32, 32)],
        ),
        'vit3d': (
            VisionTransformer3D(
                arch=tiny, img_size=16, patch_size=8, num_register_tokens=1
            ),
            [(1, 16, 16, 16), (1, 8, 8, 8)],
        ),
        'dino_vit2d': (
            DINOVisionTransformer(
                arch=tiny, img_size=28, patch_size=14, num_register_tokens=1
            ),
            [(3, 28, 28), (3, 14, 14)],
        ),
    }


def _loss(model, crops):
    """Batch mean over every crop: DDP's average of the ranks' halves is
    then the whole batch's value."""
    return sum(model(c)[0].pow(2).mean() for c in crops)


def _grads(model):
    return {
        n: p.grad.detach().clone()
        for n, p in model.named_parameters()
        if p.grad is not None
    }


def _worker(rank, world_size, init_method, result_file):
    from torch.nn.parallel import DistributedDataParallel as DDP

    init_gloo(rank, world_size, init_method)
    diffs = {}
    for name, (model, shapes) in _models().items():
        torch.manual_seed(1)
        for p in model.parameters():  # same non-trivial init on all ranks
            p.data.normal_(0, 0.2)
        crops = [torch.randn(BATCH, *s) for s in shapes]
        ref = copy.deepcopy(model).train()
        ref.with_cp = False
        _loss(ref, crops).backward()
        model.with_cp = True
        model.train()
        if name == 'swin_vit3d':  # MONAI's own (non-reentrant) checkpoint
            assert all(b.use_checkpoint for b in model._blocks())
        ddp = DDP(model)
        half = slice(rank * 2, rank * 2 + 2)
        _loss(ddp, [c[half] for c in crops]).backward()
        got, want = _grads(model), _grads(ref)
        assert set(got) == set(want), name
        # largest error relative to the largest gradient: some gradients
        # are ~1e-7 (deep LayerNorms), where float noise is all there is
        scale = max(g.abs().max().item() for g in want.values())
        diffs[name] = (
            max((got[k] - want[k]).abs().max().item() for k in want) / scale
        )
        diffs[name + '_worst'] = sorted(
            ((got[k] - want[k]).abs().max().item() / scale, k) for k in want
        )[-3:]
        diffs[name + '_nonzero'] = sum(
            bool(g.abs().sum() > 0) for g in want.values()
        )
    with open(f'{result_file}.{rank}', 'w') as f:
        json.dump(diffs, f)


@pytest.mark.slow
def test_ddp_with_cp_matches_single_process(tmp_path):
    result = tmp_path / 'diffs'
    spawn(_worker, 2, file_init_method(tmp_path), str(result))
    for rank in range(2):
        diffs = json.loads((tmp_path / f'diffs.{rank}').read_text())
        for name in ('swin_vit3d', 'vit3d', 'dino_vit2d'):
            assert diffs[name + '_nonzero'] > 10, (name, diffs)
            assert diffs[name] < 1e-4, (rank, name, diffs[name + '_worst'])
