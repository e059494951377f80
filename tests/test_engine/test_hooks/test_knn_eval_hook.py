"""KNNEvalHook: values against a direct kNN, logging, modes, teachers."""

import json
import os.path as osp

import pytest
import torch
import torch.nn.functional as F
from mmengine.config import Config
from mmengine.runner import Runner
from torch import nn

from mmssl.engine.hooks import KNNEvalHook
from mmssl.engine.runner import build_runner
from tests.support.dist import file_init_method, init_gloo, spawn

CFG = osp.join(
    osp.dirname(__file__), '..', '..', 'data', 'configs', 'simclr_tiny.py'
)


def _loader(root, split, n):
    return dict(
        batch_size=30,
        num_workers=0,
        dataset=dict(
            type='CustomDataset',
            data_root=root,
            data_prefix=split,
            indices=n,
            pipeline=[dict(type='LoadImageFromFile'), dict(type='PackInputs')],
        ),
    )


def _direct_knn(model, root, k=20, t=0.07):
    """kNN written out independently: cosine similarity, top-k votes."""
    from mmengine.runner import Runner as R

    feats, labels = [], []
    for split, n in (('train', 60), ('val', 30)):
        cfg = _loader(root, split, n)
        cfg['sampler'] = dict(type='DefaultSampler', shuffle=False)
        cfg['collate_fn'] = dict(type='default_collate')
        fs, ls = [], []
        model.eval()
        with torch.no_grad():
            for batch in R.build_dataloader(cfg):
                data = model.data_preprocessor(batch, False)
                out = model.backbone(data['inputs'])[-1]  # (B, C, H, W)
                fs.append(out.mean(dim=(2, 3)))
                ls += [int(s.gt_label) for s in data['data_samples']]
        feats.append(F.normalize(torch.cat(fs), dim=1))
        labels.append(torch.tensor(ls))
    sim = feats[1] @ feats[0].T
    top, idx = sim.topk(k, dim=1)
    votes = torch.zeros(len(labels[1]), 10)
    for q in range(len(labels[1])):
        for j in range(k):
            votes[q, labels[0][idx[q, j]]] += torch.exp(top[q, j] / t)
    return (votes.argmax(1) == labels[1]).float().mean().item() * 100


@pytest.mark.slow
def test_knn_eval_hook_in_runner(demo_data_root, tmp_path):
    cfg = Config.fromfile(CFG)
    pipe = [
        dict(type='LoadImageFromFile'),
        dict(
            type='MultiView',
            num_views=2,
            transforms=[[dict(type='RandomFlip', prob=0.5)]],
        ),
        dict(type='PackInputs'),
    ]
    cfg.train_dataloader = dict(
        batch_size=8,
        num_workers=0,
        sampler=dict(type='DefaultSampler', shuffle=True),
        collate_fn=dict(type='default_collate'),
        dataset=dict(
            type='CustomDataset',
            data_root=osp.join(demo_data_root, 'train'),
            with_label=False,
            indices=8,
            pipeline=pipe,
        ),
    )
    cfg.optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.01))
    cfg.train_cfg = dict(type='IterBasedTrainLoop', max_iters=1)
    hook = dict(
        type='KNNEvalHook',
        interval=1,
        by_epoch=False,
        bank_dataloader=_loader(demo_data_root, 'train', 60),
        query_dataloader=_loader(demo_data_root, 'val', 30),
    )
    cfg.custom_hooks = [hook]
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.work_dir = str(tmp_path)
    runner = build_runner(cfg)
    runner.train()
    knn = [h for h in runner.hooks if isinstance(h, KNNEvalHook)][0]
    metrics = knn.last_metrics
    assert set(metrics) == {'knn/top1', 'knn/top5', 'knn/time'}
    assert 0 <= metrics['knn/top1'] <= metrics['knn/top5'] <= 100
    assert runner.model.training  # train mode restored
    # same value as an independent kNN on the final weights
    assert metrics['knn/top1'] == pytest.approx(
        _direct_knn(runner.model, demo_data_root), abs=1e-4
    )
    # logged to the visualizer backend (scalars.json) at iteration 1
    scalars = [
        json.loads(line)
        for line in open(osp.join(runner.log_dir, 'vis_data', 'scalars.json'))
    ]
    logged = [s for s in scalars if 'knn/top1' in s]
    assert logged and logged[-1]['step'] == 1
    assert logged[-1]['knn/top1'] == pytest.approx(metrics['knn/top1'])
    assert runner.message_hub.get_scalar(
        'knn/top1'
    ).current() == pytest.approx(metrics['knn/top1'])


class _Backbone(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(float(value)))

    def forward(self, x):
        return (x.flatten(1)[:, :4] * self.w,)


class _Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = _Backbone(2.0)


class _Algo(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = _Backbone(1.0)
        self.teacher = _Teacher()


def test_feature_source_prefers_teacher():
    hook = KNNEvalHook(dict(), dict())
    model = _Algo()
    fn, path = hook._feature_fn(model)
    assert path == 'teacher.backbone'
    x = torch.ones(2, 3, 2, 2)
    assert torch.equal(fn(model, x)[0], torch.full((2, 4), 2.0))
    hook = KNNEvalHook(dict(), dict(), prefer_teacher=False)
    fn, path = hook._feature_fn(model)
    assert fn is None and 'mode' in path
    hook = KNNEvalHook(dict(), dict(), backbone_path='backbone')
    fn, path = hook._feature_fn(model)
    assert torch.equal(fn(model, x)[0], torch.ones(2, 4))


def test_bad_arguments():
    with pytest.raises(ValueError, match='interval'):
        KNNEvalHook(dict(), dict(), interval=0)
    with pytest.raises(ValueError, match='temperature'):
        KNNEvalHook(dict(), dict(), temperature=0)


class _ToyData(torch.utils.data.Dataset):
    """7 samples: image i is filled with i, its label is i % 3."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        from mmpretrain.structures import DataSample

        return dict(
            inputs=torch.full((3, 2, 2), float(i)),
            data_samples=DataSample().set_gt_label(i % 3),
        )


class _ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        from mmengine.model import BaseDataPreprocessor

        self.data_preprocessor = BaseDataPreprocessor()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x, mode='tensor'):
        return x.flatten(1)[:, :2] * self.w  # (B, 2): [i, i]


def _dist_worker(rank, world_size, init_method, out_file):
    import torch.distributed as torch_dist

    init_gloo(rank, world_size, init_method)
    loader = Runner.build_dataloader(
        dict(
            batch_size=2,
            num_workers=0,
            dataset=_ToyData(),
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='default_collate'),
        )
    )
    hook = KNNEvalHook(dict(), dict())
    results = hook._features(_ToyModel(), loader, None, 'bank')
    if rank == 0:
        torch.save(results, out_file)
    torch_dist.destroy_process_group()


@pytest.mark.slow
def test_features_gathered_in_order_across_ranks(tmp_path):
    """2 gloo ranks, 7 samples (padded to 8 by the sampler): rank 0 gets
    all 7 in dataset order, without the padding duplicate."""
    out = str(tmp_path / 'gathered.pth')
    spawn(_dist_worker, 2, file_init_method(tmp_path), out)
    results = torch.load(out)
    assert [int(f[0]) for f, _ in results] == list(range(7))
    assert [label for _, label in results] == [i % 3 for i in range(7)]
