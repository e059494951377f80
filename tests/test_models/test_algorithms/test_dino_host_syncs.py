"""The DINOv2 training step asks the device for no value (issue 27).

On a GPU every op that needs a tensor's value on the host (``.item()``,
``nonzero``, boolean indexing, ``if tensor:``) stalls the CPU until the
GPU catches up. On the CPU the same ops are visible to a
``TorchDispatchMode``: ``model.train_step`` of the DINOv2 demo (shrunk,
iBOT masks from ``block_mask_collate``, NaN guard, gradient clipping,
fused AdamW) and the teacher EMA must not run any of them between two log
intervals. Drop path runs at 0.4 in the ``'static'`` mode the DINO configs
use (a fixed row count, the fractional row kept on the device).
"""

import collections
import copy

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper
from mmpretrain.structures import DataSample
from torch.utils._python_dispatch import TorchDispatchMode

from mmssl.datasets.block_mask_collate import block_mask_collate
from mmssl.registry import MODELS
from mmssl.utils import register_all_modules

CONFIG = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
#: aten ops whose result needs a value from the device on the host
HOST_VALUE_OPS = (
    '_local_scalar_dense',
    'item',
    'nonzero',
    'is_nonzero',
    'masked_select',
    'equal',
    '_unique',
    'unique_consecutive',
    'bincount',
    'repeat_interleave',
)


class HostSyncCounter(TorchDispatchMode):
    """Count aten ops that read a device value on the host (boolean
    indexing too: ``aten.index`` with a bool index)."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in HOST_VALUE_OPS or (
            name in ('index', 'index_put_', 'index_put')
            and any(
                torch.is_tensor(t) and t.dtype in (torch.bool, torch.uint8)
                for t in args[1]
            )
        ):
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


def _setup(log_interval=100):
    register_all_modules()
    cfg = Config.fromfile(CONFIG)
    cfg.model.backbone.arch.num_layers = 2
    cfg.model.backbone.drop_path_rate = 0.4
    cfg.model.backbone.drop_path_mode = 'static'
    cfg.optim_wrapper.log_interval = log_interval
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    assert wrapper.optimizer.defaults.get('fused')  # device-side skips
    return model, wrapper


def _batch(seed, batch=4):
    gen = torch.Generator().manual_seed(seed)

    def img(size):
        return torch.randint(0, 255, (3, size, size), generator=gen).byte()

    items = [
        dict(
            inputs=[img(32) for _ in range(2)] + [img(16) for _ in range(4)],
            data_samples=DataSample(),
        )
        for _ in range(batch)
    ]
    np.random.seed(seed)
    return block_mask_collate(items, patch_size=4)


def test_train_step_and_ema_ask_the_host_for_nothing():
    MessageHub.get_instance('host_sync_test')
    model, wrapper = _setup()
    batches = [_batch(s) for s in range(3)]
    counts = [
        sum(s.mask.sum().item() for s in b['data_samples']) for b in batches
    ]
    assert len(set(counts)) > 1  # the masked counts differ between steps
    model.train_step(copy.deepcopy(batches[0]), wrapper)  # warm-up
    shapes = []  # the shared head's input: CLS + fixed masked buffer
    model.head.register_forward_hook(
        lambda m, args, out: shapes.append(tuple(args[0].shape))
    )
    counter = HostSyncCounter()
    with counter:
        for data in batches[1:]:
            model.train_step(copy.deepcopy(data), wrapper)
            model.update_teacher(0.99, skip=wrapper.skip_flag)
    assert counter.counts == {}, counter.counts
    assert len(shapes) == 2 and len(set(shapes)) == 1, shapes
    # the per-step reading at log time is one sync, done by report()
    wrapper.report()
    hub = MessageHub.get_current_instance()
    assert hub.get_scalar('train/grad_norm').current() > 0


def test_device_skip_leaves_student_teacher_and_adamw_state():
    MessageHub.get_instance('host_sync_skip_test')
    model, wrapper = _setup(log_interval=3)
    wrapper.max_consecutive_skips = 2
    model.train_step(_batch(0), wrapper)  # AdamW state exists
    model.update_teacher(0.9, skip=wrapper.skip_flag)
    before = copy.deepcopy(model.state_dict())
    state = copy.deepcopy(wrapper.optimizer.state_dict())
    data = model.data_preprocessor(_batch(1), True)
    losses = model(**data, mode='loss')
    loss = sum(losses.values()) * float('nan')
    wrapper.update_params(loss)
    assert float(wrapper.skip_flag) == 1.0  # read here only by the test
    model.update_teacher(0.9, skip=wrapper.skip_flag)
    after = model.state_dict()
    for key, value in before.items():
        assert torch.equal(after[key], value), key
    new_state = wrapper.optimizer.state_dict()['state']
    for key, value in state['state'].items():
        for name in ('step', 'exp_avg', 'exp_avg_sq'):
            assert torch.equal(new_state[key][name], value[name])
    assert (wrapper.consecutive_skips, wrapper.total_skips) == (1, 1)
    # the next finite step updates student and teacher again
    model.train_step(_batch(2), wrapper)  # 3rd step: report() at interval
    model.update_teacher(0.9, skip=wrapper.skip_flag)
    assert not torch.equal(
        model.teacher['head'].mlp[0].weight,
        before['teacher.head.mlp.0.weight'],
    )
    hub = MessageHub.get_current_instance()
    assert hub.get_scalar('train/nan_skips').current() == 1
    assert wrapper.consecutive_skips == 0
    # two skips in a row: the stop comes at the next report
    for _ in range(2):
        wrapper.update_params(sum(model(**data, mode='loss').values()) * 0 / 0)
    with pytest.raises(RuntimeError, match='2 consecutive'):
        wrapper.report()
