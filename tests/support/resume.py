"""Helpers of the exact-resume tests: tiny demo runs, cut and resumed."""

import copy
import glob
import os.path as osp
import shutil
from typing import Dict, List, Optional, Sequence

import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from mmssl.registry import DATASETS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO_CONFIGS = sorted(
    osp.relpath(p, ROOT)
    for p in glob.glob(
        osp.join(ROOT, 'configs', '**', '*_demo.py'), recursive=True
    )
    # recipe bases such as _base_/schedules/.../dinov2_demo.py are no demos
    if '_base_' not in p
)


class QuickTextConfig(Config):
    """A Config whose ``pretty_text`` skips yapf (about 0.9 s a call).

    mmengine formats the whole config three times per Runner and once per
    checkpoint; nothing these tests check reads that text.
    """

    @property
    def pretty_text(self) -> str:
        return f'# test config\ncfg = {self.to_dict()!r}\n'


def repoint(
    obj,
    demo_root: str,
    volume_root: Optional[str] = None,
    multichannel_root: Optional[str] = None,
):
    """Replace every ``'data/demo...'`` string in ``obj`` by the fixture,
    and ``'data/shapes...'`` too (the ``*_shapes_demo.py`` variants take
    the 32 px digits as well, and so do the dense demo's training images);
    ``'data/volumes...'`` becomes
    ``volume_root`` (the volumetric demos) and ``'data/multichannel...'``
    ``multichannel_root`` (the multi-channel TIFF demos) when given."""
    prefixes = {
        'data/demo': demo_root,
        'data/shapes': demo_root,
        'data/dense/images/training': demo_root,  # the dense demo
    }
    if volume_root is not None:
        prefixes['data/volumes'] = volume_root
    if multichannel_root is not None:
        prefixes['data/multichannel'] = multichannel_root
    for prefix, root in prefixes.items():
        if isinstance(obj, str) and obj.startswith(prefix):
            return root + obj[len(prefix) :]
    if isinstance(obj, dict):
        return type(obj)(
            {
                k: repoint(v, demo_root, volume_root, multichannel_root)
                for k, v in obj.items()
            }
        )
    if isinstance(obj, (list, tuple)):
        return type(obj)(
            repoint(v, demo_root, volume_root, multichannel_root) for v in obj
        )
    return obj


def _innermost_dataset(dataset: dict) -> dict:
    while 'dataset' in dataset:  # wrappers such as RepeatDataset
        dataset = dataset['dataset']
    return dataset


def _set_num_images(loader: dict, num_images: int) -> None:
    inner = _innermost_dataset(loader['dataset'])
    cls = DATASETS.get(inner['type'])
    if cls is None:
        raise KeyError(inner['type'])
    inner['indices'] = num_images


def tiny_cfg(
    path: str,
    demo_root: str,
    work_dir: str,
    num_images: int = 4,
    batch_size: int = 2,
    train_cfg: Optional[dict] = None,
    checkpoint: Optional[dict] = None,
    volume_root: Optional[str] = None,
    multichannel_root: Optional[str] = None,
) -> Optional[Config]:
    """The demo config on ``num_images`` images, no workers, no validation.

    The config's schedules, hooks and runner are kept; the train loop is
    mmengine's plain ``EpochBasedTrainLoop`` (3 epochs) unless
    ``train_cfg`` is given, and checkpoints are saved every 3 iterations
    by the config's own checkpoint hook unless ``checkpoint`` is given.
    None for an evaluation-only config (no ``train_dataloader``).
    """
    cfg = Config.fromfile(osp.join(ROOT, path))
    if 'train_dataloader' not in cfg:
        return None  # evaluation-only config
    object.__setattr__(cfg, '__class__', QuickTextConfig)
    roots = (demo_root, volume_root, multichannel_root)
    loader = repoint(cfg.train_dataloader.to_dict(), *roots)
    loader.update(
        batch_size=batch_size, num_workers=0, persistent_workers=False
    )
    _set_num_images(loader, num_images)
    cfg.train_dataloader = loader
    cfg.train_cfg = train_cfg or dict(type='EpochBasedTrainLoop', max_epochs=3)
    model = cfg.model
    if 'num_samples' in model:  # memory banks, pseudo-label buffers
        model.num_samples = num_images
    if model.type in ('DeepCluster', 'ODC'):  # clusters <= images
        model.num_classes = 2
        model.head.num_classes = 2
    backbone = model.get('backbone')
    init = backbone.get('init_cfg') if isinstance(backbone, dict) else None
    if isinstance(init, dict) and init.get('type') == 'Pretrained':
        backbone.init_cfg = None  # the linear probe's checkpoint=''
    if isinstance(model.get('init_cfg'), dict) and not model.init_cfg.get(
        'checkpoint', True
    ):
        model.init_cfg = None  # the fine-tune demo's checkpoint=''

    for name in ('val', 'test'):
        cfg[f'{name}_dataloader'] = None
        cfg[f'{name}_cfg'] = None
        cfg[f'{name}_evaluator'] = None
    cfg.custom_hooks = [
        h
        for h in repoint(cfg.get('custom_hooks', []), *roots)
        if h['type'] != 'PretrainedInitHook'
    ]
    for custom in cfg.custom_hooks:
        if custom['type'] in ('SwAVHook', 'SwAVQueueHook'):
            # a queue that is full, hence used, from iteration 3 on
            custom.update(batch_size=batch_size, epoch_queue_starts=0)
            custom.update(queue_length=2 * batch_size)
    hook = dict(cfg.default_hooks.checkpoint)
    hook.update(
        checkpoint or dict(interval=3, by_epoch=False, max_keep_ckpts=-1)
    )
    cfg.default_hooks.checkpoint = hook
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=100)
    cfg.visualizer.vis_backends = []
    cfg.work_dir = work_dir
    cfg.launcher = 'none'
    cfg.randomness = dict(seed=0)
    return cfg


class Recorder(Hook):
    """Per iteration: the iteration, the first group's lr, the ETA."""

    priority = 'LOWEST'

    def __init__(self) -> None:
        self.rows: List[Dict] = []

    def after_train_iter(
        self, runner, batch_idx, data_batch=None, outputs=None
    ) -> None:
        hub = runner.message_hub
        self.rows.append(
            dict(
                iter=runner.iter,
                epoch=runner.epoch,
                batch_idx=batch_idx,
                lr=runner.optim_wrapper.param_groups[0]['lr'],
                eta=hub.get_info('eta'),
            )
        )


def build(cfg: Config) -> Runner:
    """The runner the config names (``runner_type``), as tools/train.py."""
    from mmssl.engine.runner import build_runner

    return build_runner(cfg)


def train(cfg: Config, hooks: Sequence[Hook] = ()) -> tuple:
    """Build, train; return the runner and its :class:`Recorder`."""
    runner = build(cfg)
    recorder = Recorder()
    for hook in (recorder, *hooks):
        runner.register_hook(hook)
    runner.train()
    return runner, recorder


def resume_from(
    cfg: Config, checkpoint: str, work_dir: str, hooks: Sequence[Hook] = ()
) -> tuple:
    """Train ``cfg`` resumed from a copy of ``checkpoint`` in ``work_dir``.

    The work dir holds nothing else, as after a crash right after the
    checkpoint was written.
    """
    copy_path = shutil.copy(checkpoint, work_dir)
    cfg = copy.deepcopy(cfg)
    cfg.work_dir = work_dir
    cfg.resume = True
    cfg.load_from = copy_path
    return train(cfg, hooks)


def weights(runner: Runner) -> Dict[str, torch.Tensor]:
    """Every parameter and buffer of the (unwrapped) model."""
    model = getattr(runner.model, 'module', runner.model)
    out = dict(model.named_parameters())
    out.update(model.named_buffers())
    return {k: v.detach().cpu() for k, v in out.items()}


def max_abs_diff(a: Runner, b: Runner) -> float:
    """Largest absolute difference over all parameters and buffers."""
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    diff = 0.0
    for key, value in wa.items():
        if value.numel():
            delta = (value.double() - wb[key].double()).abs().max().item()
            diff = max(diff, delta)
    return diff
