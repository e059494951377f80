"""No CPU-GPU synchronisation in 20 DINOv2 training steps (issue 27).

``torch.cuda.set_sync_debug_mode('error')`` raises on every operation
that makes the host wait for the device (``.item()``, ``nonzero``,
boolean indexing, a blocking copy). The steps run the DINOv2 demo model
(iBOT masks from ``block_mask_collate``, KoLeo, Sinkhorn-Knopp) in bf16
with the NaN guard, gradient clipping, fused AdamW and the teacher EMA;
the batches are pinned and copied without blocking, as the GPU presets
do. The reading at the log interval is the only sync, outside the steps.
Skipped without CUDA; the CPU twin is
tests/test_models/test_algorithms/test_dino_host_syncs.py.
"""

import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper

from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.steps import demo_batch

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason='needs a CUDA device'
)
CONFIG = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'


@pytest.mark.parametrize(
    'to_rgb',
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.xfail(
                reason="mmpretrain's BGR->RGB flip indexes with a list "
                '(a blocking copy of the index to the GPU?)',
                strict=False,
            ),
        ),
    ],
)
def test_twenty_steps_without_a_host_sync(to_rgb):
    register_all_modules()
    MessageHub.get_instance('cuda_host_sync_test')
    cfg = Config.fromfile(CONFIG)
    cfg.model.backbone.drop_path_rate = 0.4
    cfg.model.backbone.drop_path_mode = 'static'
    # mmpretrain's SelfSupDataPreprocessor flips BGR to RGB with a python
    # list index, whose index tensor may be copied to the GPU blocking:
    # to_rgb=True says whether it does (xfail: it syncs)
    cfg.model.data_preprocessor.update(non_blocking=True, to_rgb=to_rgb)
    cfg.optim_wrapper.update(
        type='NaNGuardAmpOptimWrapper',
        dtype='bfloat16',
        loss_scale=dict(enabled=False),
        log_interval=1000,
    )
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).cuda()
    model.init_weights()
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    assert wrapper.optimizer.defaults.get('fused')
    batches = [demo_batch(s, batch=8, pin=True) for s in range(4)]
    for data in batches[:2]:  # warm-up: optimiser state, allocator
        model.train_step(data, wrapper)
        model.update_teacher(0.99, skip=wrapper.skip_flag)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode('error')
    try:
        for i in range(20):
            log = model.train_step(batches[i % 4], wrapper)  # not changed
            model.update_teacher(0.99, skip=wrapper.skip_flag)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert torch.isfinite(log['loss']).item()
    wrapper.report()  # the one reading at the log interval
    assert wrapper.total_skips == 0
