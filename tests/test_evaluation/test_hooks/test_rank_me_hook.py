"""RankMeHook: values against a direct RankMe, subset, logging, warnings."""

import json
import os.path as osp
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.runner import Runner
from torch import nn

from mmssl.engine.runner import build_runner
from mmssl.evaluation.folders import eval_pipeline, volume_eval_pipeline
from mmssl.evaluation.hooks import RankMeHook
from mmssl.evaluation.hooks.rank_me_hook import rising
from mmssl.evaluation.rank import evenly_spaced, rank_metrics
from mmssl.registry import DATASETS

CFG = osp.join(
    osp.dirname(__file__), '..', '..', 'data', 'configs', 'simclr_tiny.py'
)


def _train_pipeline():
    return [
        dict(type='LoadImageFromFile'),
        dict(
            type='MultiView',
            num_views=2,
            transforms=[
                [
                    dict(type='RandomResizedCrop', scale=32),
                    dict(type='RandomFlip', prob=0.5),
                ]
            ],
        ),
        dict(type='PackInputs'),
    ]


def _runner_cfg(root, work_dir, hook):
    cfg = Config.fromfile(CFG)
    cfg.train_dataloader = dict(
        batch_size=8,
        num_workers=0,
        sampler=dict(type='DefaultSampler', shuffle=True),
        collate_fn=dict(type='default_collate'),
        dataset=dict(
            type='ImageFolderDataset',
            data_root=osp.join(root, 'train'),
            pipeline=_train_pipeline(),
        ),
    )
    cfg.optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.05))
    cfg.train_cfg = dict(type='IterBasedTrainLoop', max_iters=2)
    cfg.custom_hooks = [hook]
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.work_dir = str(work_dir)
    return cfg


def _direct_rankme(model, root, indices):
    """RankMe written out apart from the hook: the images at ``indices``
    through the eval pipeline at 32 px, the backbone's last stage averaged
    over space, :func:`rank_metrics`."""
    cfg = dict(
        batch_size=len(indices),
        num_workers=0,
        sampler=dict(type='DefaultSampler', shuffle=False),
        collate_fn=dict(type='default_collate'),
        dataset=dict(
            type='ImageFolderDataset',
            data_root=osp.join(root, 'train'),
            indices=list(indices),
            pipeline=eval_pipeline(32),
        ),
    )
    model.eval()
    with torch.no_grad():
        (batch,) = list(Runner.build_dataloader(cfg))
        data = model.data_preprocessor(batch, False)
        feats = model.backbone(data['inputs'])[-1].mean(dim=(2, 3))
    model.train()
    return rank_metrics(feats)


def test_rankme_in_runner(demo_data_root, tmp_path):
    hook = dict(type='RankMeHook', max_images=24, batch_size=8, by_epoch=False)
    runner = build_runner(_runner_cfg(demo_data_root, tmp_path, hook))
    runner.train()
    rank = [h for h in runner.hooks if isinstance(h, RankMeHook)][0]
    size = len(runner.train_dataloader.dataset)
    expected = np.linspace(0, size - 1, 24).round().astype(int).tolist()
    assert rank.indices == expected  # capped, evenly spaced
    assert list(rank._loader.dataset.indices) == expected  # reused loader
    metrics = rank.last_metrics
    assert set(metrics) == {
        'rank/rankme',
        'rank/rankme_fraction',
        'rank/spread',
        'rank/time',
    }
    assert runner.model.training  # train mode restored
    direct = _direct_rankme(runner.model, demo_data_root, expected)
    assert metrics['rank/rankme'] == pytest.approx(direct['rankme'], rel=1e-5)
    assert metrics['rank/spread'] == pytest.approx(direct['spread'], rel=1e-5)
    assert metrics['rank/rankme_fraction'] == pytest.approx(
        direct['rankme'] / 24, rel=1e-5
    )
    # before training (step 0) and after each of the 2 iterations
    scalars = [
        json.loads(line)
        for line in open(osp.join(runner.log_dir, 'vis_data', 'scalars.json'))
    ]
    logged = [s for s in scalars if 'rank/rankme' in s]
    assert [s['step'] for s in logged] == [0, 1, 2]
    assert logged[0]['rank/rankme'] == pytest.approx(rank.start[0])
    assert rank.start[1] == 'random init'
    assert logged[-1]['rank/rankme'] == pytest.approx(metrics['rank/rankme'])
    assert runner.message_hub.get_scalar(
        'rank/rankme'
    ).current() == pytest.approx(metrics['rank/rankme'])


def test_subset_indices():
    assert evenly_spaced(5, 1024) == [0, 1, 2, 3, 4]
    picked = evenly_spaced(1000, 10)
    assert picked == evenly_spaced(1000, 10)
    assert len(picked) == 10 and len(set(picked)) == 10
    assert picked[0] == 0 and picked[-1] == 999
    gaps = np.diff(picked)
    assert gaps.min() >= 110 and gaps.max() <= 111


def test_rising_from_a_near_constant_start():
    # the DINOv2 CPU preset on 200 digits, epochs 0-8: learning (kNN 10
    # -> 48 %), however slowly, is no collapse
    measured = [1.0006, 1.0059, 1.0377, 1.1001, 1.1895, 1.2957, 1.3989]
    assert all(rising(b, a) for a, b in zip(measured, measured[1:]))
    assert not rising(1.0004, 1.0003)  # noise at a constant
    assert not rising(1.3, 1.3) and not rising(1.2, 1.3)
    assert not rising(1.2, None)


def test_default_dataloader_uses_eval_pipeline():
    cfg = Config.fromfile(CFG)
    inner = dict(
        type='ImageFolderDataset',
        data_root='x',
        pipeline=_train_pipeline(),
    )
    cfg.train_dataloader = dict(
        batch_size=8,
        num_workers=3,
        dataset=dict(
            type='MixedDataset', datasets=[inner, dict(inner, data_root='y')]
        ),
    )
    loader = RankMeHook(batch_size=5).default_dataloader(cfg)
    assert loader['batch_size'] == 5 and loader['num_workers'] == 3
    for dataset in loader['dataset']['datasets']:  # wrappers' too
        assert dataset['pipeline'] == eval_pipeline(32)  # the train crop
    assert cfg.train_dataloader.dataset.datasets[0].pipeline[1]['type'] == (
        'MultiView'
    )  # the config is left as it was
    # a ViT: its img_size; a multi-channel loader is kept
    cfg.model.backbone = dict(type='VisionTransformer', img_size=112)
    tiff = dict(type='LoadMultiChannelTiff', channels=5)
    cfg.train_dataloader.dataset = dict(
        type='ImageFolderDataset', pipeline=[tiff, dict(type='PackInputs')]
    )
    loader = RankMeHook().default_dataloader(cfg)
    assert loader['dataset']['pipeline'] == eval_pipeline(112, loader=tiff)


def _volume_config(name):
    return Config.fromfile(
        osp.join(
            osp.dirname(__file__), '..', '..', '..', 'configs', 'volumetric',
            name,
        )
    )  # fmt: skip


def test_volumes_are_loaded_as_in_training_then_centre_cropped(
    volume_data_root,
):
    """Volumes keep the dataset's loading ``preprocess`` (resampling,
    intensity window; a disk cache is shared with training, a memory
    cache dropped) and become the centre cube at the backbone's size."""
    cfg = _volume_config('dino3d_vit-tiny-p8_1xb32-60e_demo.py')
    dataset = RankMeHook().default_dataloader(cfg)['dataset']
    train = cfg.train_dataloader.dataset
    assert dataset['preprocess'] == train.preprocess
    assert dataset['data_root'] == train.data_root
    assert dataset['pipeline'] == volume_eval_pipeline(32)
    assert dataset['pipeline'][0]['spatial_size'] == (32, 32, 32)
    dataset['data_root'] = volume_data_root
    sample = DATASETS.build(dataset)[0]['inputs']
    assert type(sample) is torch.Tensor and sample.shape == (1, 32, 32, 32)
    ct = _volume_config('dino3d_vit-tiny-p16_my-ct.py')
    dataset = RankMeHook().default_dataloader(ct)['dataset']
    assert dataset['pipeline'][0]['spatial_size'] == (96, 96, 96)
    assert dataset['ann_file'] == ct.train_dataloader.dataset.ann_file
    assert dataset['cache'] == 'disk'
    assert dataset['cache_dir'] == ct.train_dataloader.dataset.cache_dir
    ct.train_dataloader.dataset.cache = 'memory'
    assert 'cache' not in RankMeHook().default_dataloader(ct)['dataset']


def test_a_config_without_training_data_is_refused_at_start():
    runner = SimpleNamespace(cfg=Config(dict(train_dataloader=None)))
    with pytest.raises(ValueError, match=r'RankMeHook.*dataloader='):
        RankMeHook().before_train(runner)
    hook = RankMeHook(dataloader=dict(dataset=dict()), eval_before_train=False)
    hook.before_train(runner)  # given explicitly: no refusal


class _ToyData(torch.utils.data.Dataset):
    """10 images of 3x2x2 random values (seeded by index)."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        from mmpretrain.structures import DataSample

        gen = torch.Generator().manual_seed(i)
        return dict(
            inputs=torch.randn(3, 2, 2, generator=gen),
            data_samples=DataSample(),
        )


class _Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        # (B, 12); scale 0: the same vector for every image
        return (x.flatten(1) * self.scale + 1.0,)


class _Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = _Backbone()


class _Algo(nn.Module):
    def __init__(self):
        super().__init__()
        from mmengine.model import BaseDataPreprocessor

        self.data_preprocessor = BaseDataPreprocessor()
        self.backbone = nn.Identity()
        self.teacher = _Teacher()


def _toy_runner(model, name):
    added = []
    return SimpleNamespace(
        cfg=Config(dict(model=dict(type='X'))),
        model=model,
        seed=0,
        iter=0,
        epoch=0,
        message_hub=MessageHub.get_instance(name),
        visualizer=SimpleNamespace(
            add_scalars=lambda d, step: added.append((step, dict(d)))
        ),
        added=added,
    )


def test_collapse_and_drop_are_warned(monkeypatch):
    logs = []
    monkeypatch.setattr(
        'mmssl.evaluation.hooks.rank_me_hook.print_log',
        lambda msg, logger=None, level=20: logs.append((level, msg)),
    )
    model = _Algo()
    model.teacher.eval()  # a mix of modes, given back as found
    runner = _toy_runner(model, 'rankme_toy')
    hook = RankMeHook(
        dataloader=dict(batch_size=4, num_workers=0, dataset=_ToyData()),
        max_images=8,
    )
    hook.before_train(runner)
    first = hook.last_metrics['rank/rankme']
    feats = torch.stack(
        [_ToyData()[i]['inputs'].flatten() + 1 for i in hook.indices]
    )
    assert first == pytest.approx(rank_metrics(feats)['rankme'], rel=1e-6)
    assert first > 3 and runner.added[0][0] == 0
    assert all(level == 20 for level, _ in logs)
    assert 'features from teacher.backbone at epoch 0' in logs[0][1]
    with torch.no_grad():
        model.teacher.backbone.scale.zero_()  # every image: one vector
    runner.epoch, runner.iter = 1, 3
    hook.after_train_epoch(runner)
    value = hook.last_metrics['rank/rankme']
    assert value == pytest.approx(1.0, abs=1e-3)
    lines = [msg for _, msg in logs]
    assert f'(random init {first:.2f})' in lines[-3]
    assert 'at epoch 2' in lines[-3]
    warnings = [msg for level, msg in logs if level == 30]
    assert len(warnings) == 2
    assert 'collapse' in warnings[0] and 'learning rate' in warnings[0]
    assert 'teacher temperature' in warnings[0] and 'loss' in warnings[0]
    assert f'best {first:.2f}' in warnings[1]
    assert runner.added[-1][0] == 3  # iterations done, not 4
    assert model.training and model.backbone.training
    assert not model.teacher.training and not model.teacher.backbone.training


def test_same_features_at_random_init_are_not_a_collapse(monkeypatch):
    """A ViT with LayerScale 1e-5 gives every image about the same CLS
    token before training: RankMe 1 then is a note, not a warning."""
    logs = []
    monkeypatch.setattr(
        'mmssl.evaluation.hooks.rank_me_hook.print_log',
        lambda msg, logger=None, level=20: logs.append((level, msg)),
    )
    model = _Algo()
    with torch.no_grad():
        model.teacher.backbone.scale.zero_()
    runner = _toy_runner(model, 'rankme_toy_init')  # same: 1 + 0 * x
    hook = RankMeHook(
        dataloader=dict(batch_size=4, num_workers=0, dataset=_ToyData())
    )
    hook.before_train(runner)
    assert hook.last_metrics['rank/rankme'] == pytest.approx(1.0, abs=1e-3)
    assert [level for level, _ in logs] == [20, 20]
    assert 'before training' in logs[1][1] and 'rise' in logs[1][1]
    with torch.no_grad():
        model.teacher.backbone.scale.fill_(0.02)
    runner.epoch, runner.iter = 0, 3
    hook.after_train_epoch(runner)  # rising but below 1.5: learning
    assert 1.2 < hook.last_metrics['rank/rankme'] < 1.5
    assert [level for level, _ in logs][2:] == [20]
    runner.epoch, runner.iter = 1, 6
    hook.after_train_epoch(runner)  # the same again: stuck, a warning
    assert [level for level, _ in logs][3:] == [20, 30]
    assert 'collapse' in logs[-1][1]


def _dist_worker(rank, world_size, init_method, out_file):
    import torch.distributed as torch_dist

    from tests.support.dist import init_gloo

    init_gloo(rank, world_size, init_method)
    runner = _toy_runner(_Algo(), f'rankme_dist_{rank}')
    hook = RankMeHook(
        dataloader=dict(batch_size=2, num_workers=0, dataset=_ToyData()),
        max_images=7,
    )
    hook.evaluate(runner, step=0)
    torch.save((hook.indices, hook.last_metrics), f'{out_file}.{rank}')
    torch_dist.destroy_process_group()


@pytest.mark.slow
def test_ranks_share_the_images_and_agree(tmp_path):
    """2 gloo ranks, 7 of 10 images (padded to 8 by the sampler): every
    rank logs the RankMe of exactly those 7 images."""
    from tests.support.dist import file_init_method, spawn

    out = str(tmp_path / 'rank')
    spawn(_dist_worker, 2, file_init_method(tmp_path), out)
    indices = evenly_spaced(10, 7)
    feats = torch.stack(
        [_ToyData()[i]['inputs'].flatten() + 1 for i in indices]
    )
    expected = rank_metrics(feats)['rankme']
    for rank in (0, 1):
        got_indices, metrics = torch.load(f'{out}.{rank}')
        assert got_indices == indices
        assert metrics['rank/rankme'] == pytest.approx(expected, rel=1e-6)


def test_a_resumed_or_pretrained_start_is_not_random_init(monkeypatch):
    logs = []
    monkeypatch.setattr(
        'mmssl.evaluation.hooks.rank_me_hook.print_log',
        lambda msg, logger=None, level=20: logs.append((level, msg)),
    )
    loader = dict(batch_size=4, num_workers=0, dataset=_ToyData())
    model = _Algo()
    with torch.no_grad():
        model.teacher.backbone.scale.zero_()  # collapsed
    runner = _toy_runner(model, 'rankme_toy_resume')
    runner.epoch, runner.iter = 2, 6  # resumed after 2 epochs
    RankMeHook(dataloader=loader).before_train(runner)
    assert '(at start) of at most' in logs[0][1]
    assert logs[0][1].endswith('at epoch 2')
    assert runner.added[0][0] == 6
    # a collapsed checkpoint is a collapse, not LayerScale at random init
    assert logs[1][0] == 30 and 'collapse' in logs[1][1]
    logs.clear()
    runner = _toy_runner(_Algo(), 'rankme_toy_load')
    runner.cfg.load_from = 'a.pth'
    RankMeHook(dataloader=loader).before_train(runner)
    assert '(at start) of at most' in logs[0][1]
