"""The demo linear probes are real linear probes: only the head learns."""

import copy
import os
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

from mmssl.engine.runner import build_runner

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PROBES = osp.join(ROOT, 'configs', 'benchmarks', 'linear_probe')


class _Snapshot(Hook):
    """Copy the model's state once weights are initialised."""

    def before_train(self, runner) -> None:
        self.state = copy.deepcopy(runner.model.state_dict())


def _train_probe(name: str, data_root: str, work_dir: str):
    cfg = Config.fromfile(osp.join(PROBES, name))
    cfg.model.backbone.init_cfg = None  # random init: no checkpoint needed
    cfg.custom_hooks = []
    cfg.work_dir = work_dir
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        loader.dataset.data_root = data_root
        loader.batch_size = 16
        loader.num_workers = 0
        loader.persistent_workers = False
    cfg.train_cfg = dict(type='IterBasedTrainLoop', max_iters=3)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.test_cfg = cfg.test_dataloader = cfg.test_evaluator = None
    cfg.param_scheduler = []
    cfg.default_hooks.checkpoint = None
    runner = build_runner(cfg)
    snapshot = _Snapshot()
    runner.register_hook(snapshot, priority='LOWEST')
    runner.train()
    return snapshot.state, runner.model.state_dict()


@pytest.mark.parametrize(
    'name',
    [
        'linear_resnet18-w16_1xb64-5e_demo.py',
        'linear_vit-tiny-p4_1xb64-5e_demo.py',
    ],
)
def test_only_the_head_learns(name, demo_data_root, tmp_path):
    before, after = _train_probe(name, demo_data_root, str(tmp_path))
    backbone = [k for k in before if k.startswith('backbone.')]
    # parameters and buffers (BN running statistics) of the backbone
    assert any('running_mean' in k for k in backbone) == ('resnet' in name)
    changed = [k for k in backbone if not torch.equal(before[k], after[k])]
    assert changed == []
    head = [k for k in before if k.startswith('head.')]
    assert head and all(not torch.equal(before[k], after[k]) for k in head)


@pytest.mark.parametrize(
    'name, size',
    [
        ('linear_resnet18-w16_1xb64-5e_shapes.py', None),
        ('linear_vit-tiny-p8_1xb64-5e_shapes.py', 64),
    ],
)
def test_shapes_probes_read_the_shapes_set(name, size):
    cfg = Config.fromfile(osp.join(PROBES, name))
    assert cfg.train_dataloader.dataset.data_root == 'data/shapes'
    assert cfg.val_dataloader.dataset.data_root == 'data/shapes'
    assert cfg.model.data_preprocessor.mean == [70.0, 70.0, 70.0]
    assert cfg.model.backbone.get('img_size') == size


@pytest.mark.parametrize(
    'name',
    sorted(p for p in os.listdir(PROBES) if p.endswith('.py')),
)
def test_max_epochs_alone_rescales_the_probe(name):
    """`--max-epochs 2`: the cosine, the evaluation and the checkpoint
    interval all follow (they were written against 5 or 100 epochs)."""
    from mmssl.apis import prepare_train_cfg
    from mmssl.config.run_length import resolve_run_fractions

    cfg = prepare_train_cfg(osp.join(PROBES, name), max_epochs=2)
    resolve_run_fractions(cfg)
    (cosine,) = cfg.param_scheduler
    assert (cosine['begin'], cosine['end']) == (0, 2)
    assert 'T_max' not in cosine  # end - begin
    assert 1 <= cfg.train_cfg.val_interval <= 2
    assert 1 <= cfg.default_hooks.checkpoint.interval <= 2
