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

import copy

import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper

from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules
from tests.support.steps import HostSyncCounter, demo_batch

CONFIG = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'


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


def test_train_step_and_ema_ask_the_host_for_nothing():
    MessageHub.get_instance('host_sync_test')
    model, wrapper = _setup()
    batches = [demo_batch(s) for s in range(3)]
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
    model.train_step(demo_batch(0), wrapper)  # AdamW state exists
    model.update_teacher(0.9, skip=wrapper.skip_flag)
    before = copy.deepcopy(model.state_dict())
    state = copy.deepcopy(wrapper.optimizer.state_dict())
    data = model.data_preprocessor(demo_batch(1), True)
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
    model.train_step(demo_batch(2), wrapper)  # 3rd step: report() at interval
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
