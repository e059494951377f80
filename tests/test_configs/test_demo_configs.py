"""Every ``configs/**/*_demo.py`` trains a few iterations on CPU.

For each demo config the test builds a Runner with the data roots pointed at
the ``demo_data_root`` fixture, 24 training images at batch 8 (3 iterations,
one epoch), no workers and no validation, then checks that

* every loss is finite and the total loss changes between iterations,
* every trainable weight moved, momentum copies moved, and what a demo
  keeps fixed did not (frozen parameters, target generators, the DINO
  last layer during its frozen first epoch),
* a checkpoint is written, and
* it loads back into a freshly built model with identical weights.
"""

import copy
import glob
import inspect
import math
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook

from mmssl.checkpoint import load_checkpoint
from mmssl.config.run_length import resolve_run_fractions
from mmssl.engine.runner import build_runner
from mmssl.registry import DATASETS, MODELS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO_CONFIGS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(
        osp.join(ROOT, 'configs', '**', '*_demo.py'), recursive=True
    )
    # recipe bases such as _base_/schedules/.../dinov2_demo.py are no demos
    if '_base_' not in p
    # evaluation configs of a pretrained backbone; tests/test_tools covers
    # them (they need a checkpoint to start from)
    if osp.join('configs', 'benchmarks') not in p
    # volumetric demos need volumes: test_volume_demo_configs.py
    and '3d' not in osp.basename(p)
    # multi-channel TIFF demos: test_multichannel_demo_configs.py
    and osp.join('configs', 'multichannel') not in p
)
NUM_IMAGES = 24
BATCH = 8


def repoint_prefixes(obj, prefixes: dict):
    """Replace every string in ``obj`` that starts with a key of
    ``prefixes`` (e.g. ``'data/volumes'``) by that key's fixture folder."""
    for prefix, root in prefixes.items():
        if isinstance(obj, str) and obj.startswith(prefix):
            return root + obj[len(prefix) :]
    if isinstance(obj, dict):
        return type(obj)(
            {k: repoint_prefixes(v, prefixes) for k, v in obj.items()}
        )
    if isinstance(obj, (list, tuple)):
        return type(obj)(repoint_prefixes(v, prefixes) for v in obj)
    return obj


def repoint(obj, demo_root: str):
    """Replace every ``'data/demo...'`` string in ``obj`` by the fixture.

    ``'data/shapes...'`` (the ``*_shapes_demo.py`` variants) too: their
    64 px crops and patches take the 32 px digits as well.
    """
    return repoint_prefixes(
        obj,
        {
            'data/demo': demo_root,
            'data/shapes': demo_root,
            'data/dense/images/training': demo_root,  # the dense demo
        },
    )


def train_two_iterations(
    path: str, prefix: str, data_root: str, batch_size: int, work_dir
) -> None:
    """Train a demo config whose data folder ``prefix`` is replaced by a
    fixture of ``2 * batch_size`` training items for one epoch (two
    iterations, no evaluation); check that every trainable weight moved,
    the losses are finite and the epoch's checkpoint was written."""
    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = repoint_prefixes(
        cfg.train_dataloader.to_dict(), {prefix: data_root}
    )
    loader.update(batch_size=batch_size, num_workers=0)
    loader.update(persistent_workers=False)
    cfg.train_dataloader = loader
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
    for name in ('val', 'test'):
        cfg[f'{name}_dataloader'] = None
        cfg[f'{name}_cfg'] = None
        cfg[f'{name}_evaluator'] = None
    for sched in cfg.get('param_scheduler') or []:
        sched.update(begin=0, end=1)
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.work_dir = str(work_dir)
    cfg.launcher = 'none'
    runner = build_runner(copy.deepcopy(cfg))
    recorder = LossRecorder()
    runner.register_hook(recorder, priority='LOWEST')
    weights = WeightRecorder()
    runner.register_hook(weights)
    runner.train()
    check_weights_moved(weights.start, runner.model, cfg)
    assert len(recorder.records) == 2
    for record in recorder.records:
        for key, value in record.items():
            assert math.isfinite(value), (key, value)
    assert osp.isfile(osp.join(str(work_dir), 'epoch_1.pth'))


def _innermost_dataset(dataset: dict) -> dict:
    while 'dataset' in dataset:  # wrappers such as RepeatDataset
        dataset = dataset['dataset']
    return dataset


def _accepts_indices(dataset_type) -> bool:
    """Whether the dataset class takes mmengine's ``indices`` argument."""
    cls = (
        DATASETS.get(dataset_type)
        if isinstance(dataset_type, str)
        else dataset_type
    )
    if cls is None:
        return False
    params = inspect.signature(cls.__init__).parameters
    return 'indices' in params or any(
        p.kind == p.VAR_KEYWORD for p in params.values()
    )


def tiny_demo_cfg(path: str, demo_root: str, work_dir: str) -> Config:
    """The demo config shrunk to 3 CPU iterations without validation."""
    cfg = Config.fromfile(osp.join(ROOT, path))
    cfg.train_dataloader = repoint(cfg.train_dataloader.to_dict(), demo_root)
    loader = cfg.train_dataloader
    loader.update(batch_size=BATCH, num_workers=0, persistent_workers=False)
    inner = _innermost_dataset(loader['dataset'])
    if _accepts_indices(inner['type']):
        inner['indices'] = NUM_IMAGES
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=1)
    if 'num_samples' in cfg.model:  # memory banks / pseudo-label buffers
        cfg.model.num_samples = NUM_IMAGES
    for name in ('val', 'test'):
        cfg[f'{name}_dataloader'] = None
        cfg[f'{name}_cfg'] = None
        cfg[f'{name}_evaluator'] = None
    # demos may rescale hooks/schedules to their own epoch count; keep them
    # valid for one epoch
    schedulers = cfg.get('param_scheduler') or []
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    for sched in schedulers:
        sched['begin'] = 0
        sched['end'] = 1
        if 'T_max' in sched:
            sched['T_max'] = 1
    cfg.param_scheduler = schedulers
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.custom_hooks = repoint(cfg.get('custom_hooks', []), demo_root)
    cfg.work_dir = work_dir
    cfg.launcher = 'none'
    cfg.randomness = dict(seed=0)
    return cfg


#: prefixes of momentum (EMA) copies: requires_grad=False, but they move
EMA_PREFIXES = ('teacher.', 'target_net.', 'encoder_k.', 'momentum_encoder.')
#: requires_grad=False parameters that move on purpose, with the reason
MOVES_ANYWAY = {
    # mmpretrain's VQKD (BEiT v2 tokenizer) EMA-updates its codebook
    # whenever it runs in training mode, inside BEiT v2 pretraining too
    'target_generator.quantize.embedding.weight',
}


class WeightRecorder(Hook):
    """Copies every parameter (and whether it is trainable) once the
    weights are initialised, before any other hook runs."""

    priority = 'HIGHEST'

    def before_train(self, runner):
        self.start = {
            k: (v.detach().clone(), v.requires_grad)
            for k, v in runner.model.named_parameters()
        }


def _fixed_by_design(name: str, cfg: Config) -> bool:
    """Trainable-looking parameters the demo keeps fixed for this epoch:
    the target generator (tokenizer, CLIP teacher: used without grad), the
    mask token of a DINO family without a masking term (no gradient) and
    the layers FreezeLastLayerHook freezes during its first epochs."""
    if name.startswith('target_generator.'):
        return True
    terms = cfg.model.get('terms')
    if isinstance(terms, dict) and 'ibot_patch' not in terms:
        if name.endswith('backbone.mask_token'):  # no view is masked
            return True
    for hook in cfg.get('custom_hooks', []):
        if hook['type'] == 'FreezeLastLayerHook' and not name.startswith(
            EMA_PREFIXES
        ):
            keys = hook.get('keys', ('last_layer',))
            if hook.get('freeze_epochs', 1) >= 1 and any(
                k in name for k in keys
            ):
                return True
    return False


def check_weights_moved(start: dict, model, cfg: Config) -> None:
    cfg = copy.deepcopy(cfg)
    resolve_run_fractions(cfg)  # e.g. freeze_epochs='10%', as the runner
    moved_ema = []
    for name, p in model.named_parameters():
        before, trainable = start[name]
        moved = not torch.equal(before, p.detach())
        if name.startswith(EMA_PREFIXES):
            moved_ema.append(moved)
        elif _fixed_by_design(name, cfg) or not trainable:
            assert not moved or name in MOVES_ANYWAY, f'{name} moved'
        else:
            assert moved, f'trainable {name} did not move'
    if moved_ema:  # the momentum update ran
        assert sum(moved_ema) > len(moved_ema) / 2, moved_ema


class LossRecorder(Hook):
    """Keeps every iteration's log variables."""

    def __init__(self):
        self.records = []

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ):
        self.records.append({k: float(v.detach()) for k, v in outputs.items()})


@pytest.mark.slow
@pytest.mark.parametrize('path', DEMO_CONFIGS)
def test_demo_config_trains(path, demo_data_root, tmp_path):
    cfg = tiny_demo_cfg(path, demo_data_root, str(tmp_path))
    runner = build_runner(copy.deepcopy(cfg))
    recorder = LossRecorder()
    runner.register_hook(recorder, priority='LOWEST')
    weights = WeightRecorder()
    runner.register_hook(weights)
    runner.train()
    check_weights_moved(weights.start, runner.model, cfg)

    losses = [r['loss'] for r in recorder.records]
    assert len(losses) >= 2
    for record in recorder.records:
        for key, value in record.items():
            assert math.isfinite(value), (key, value)
    assert max(losses) - min(losses) > 0, losses

    ckpt = tmp_path / 'epoch_1.pth'
    assert ckpt.is_file()
    fresh = MODELS.build(cfg.model)
    # through mmssl's safe loader: every algorithm's checkpoint must hold
    # only types the allowlist accepts
    state = load_checkpoint(str(ckpt), map_location='cpu')
    fresh.load_state_dict(state['state_dict'], strict=True)
    trained = runner.model.state_dict()
    loaded = fresh.state_dict()
    assert trained.keys() == loaded.keys()
    for key, value in trained.items():
        assert torch.equal(value.cpu(), loaded[key]), key


KNN_DEMOS = [
    p
    for p in DEMO_CONFIGS
    if Config.fromfile(osp.join(ROOT, p)).get('test_cfg') is not None
]


#: kNN datasets built so far, by their config: most demos share one, and
#: building it (listing ~1800 files) took most of each case's time
_KNN_DATASETS = {}


def _knn_dataset(dataset_cfg: dict):
    key = repr(dataset_cfg)
    if key not in _KNN_DATASETS:
        _KNN_DATASETS[key] = DATASETS.build(copy.deepcopy(dataset_cfg))
    return _KNN_DATASETS[key]


@pytest.mark.parametrize('path', KNN_DEMOS)
def test_demo_config_features_for_knn(path, demo_data_root):
    """What the kNN evaluation reads: one vector per image, the same on a
    second call (no random masking in ``mode='tensor'``), and different for
    different images. (mmpretrain's MFF returned the random order of a
    masked forward here and iTPN's HiViT crashed: both at chance/absent.)"""
    from mmengine.dataset import default_collate

    from mmssl.engine.runner.feature_extraction import batch_features

    cfg = Config.fromfile(osp.join(ROOT, path))
    loader = repoint(cfg.test_dataloader.to_dict(), demo_data_root)
    dataset = _knn_dataset(loader['dataset'])
    step = len(dataset) // 4
    batch = default_collate([dataset[i * step] for i in range(4)])
    if '_shapes_demo' in path:  # the shapes set's 64 px, not the digits'
        # 32 px (BEiT's relative position bias is fixed to its token grid)
        imgs = batch['inputs']
        batch['inputs'] = torch.nn.functional.interpolate(
            imgs.float(), size=(64, 64), mode='nearest'
        ).to(imgs.dtype)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.eval()
    feats = batch_features(model, batch)
    again = batch_features(model, batch)
    assert feats.dim() == 2 and feats.shape[0] == 4, feats.shape
    assert torch.isfinite(feats).all()
    torch.testing.assert_close(feats, again)
    spread = (feats - feats.mean(0)).norm(dim=1) / feats.norm(dim=1).mean()
    assert (spread > 1e-3).all(), spread
