"""The tasks of ``tools/eval.py``: kNN, linear, seg and depth probes.

Each task loads the weights through
:mod:`mmssl.evaluation.load_backbone` (or says that it measures the
random init), runs, and returns its metrics; ``args.counts`` gets the
image counts for the run's record (:mod:`mmssl.evaluation.records`
writes the files).
"""

import os.path as osp
from argparse import Namespace
from typing import Dict, Tuple

import torch

from mmssl.evaluation.dense_probe import Featurizer, ProbeSettings

#: Class count of each segmentation layout (ADE20K: 150 after
#: reduce_zero_label); a ``classes.txt`` in the data root overrides it.
LAYOUT_CLASSES = {'ade20k': 150, 'voc': 21, 'cityscapes': 19}
HEADLINE = {
    'knn': 'knn/top1',
    'linear': 'linear/top1',
    'seg': 'seg/mIoU',
    'depth': 'depth/rmse',
    'finetune': 'finetune/top1',
    'rank': 'rank/rankme',
}


class PatchPixels(torch.nn.Module):
    """The raw-pixel baseline: each patch's pixels are its feature."""

    def __init__(self, patch_size: int) -> None:
        super().__init__()
        self.patch_size = patch_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.patch_size
        B, C, H, W = x.shape
        # (B, C, H, W) -> (B, C * p * p, H / p, W / p)
        return torch.nn.functional.pixel_unshuffle(x, p).reshape(
            B, C * p * p, H // p, W // p
        )


def _config_int(cfg, key: str, default: int) -> int:
    value = (cfg.model.get('backbone') or {}).get(key, default)
    return int(value[0] if isinstance(value, (list, tuple)) else value)


def dense_featurizer(cfg, args: Namespace) -> Tuple[Featurizer, str]:
    """The frozen backbone of ``cfg`` with ``args.checkpoint`` loaded (or
    random init, or raw pixels); and what was loaded, for the output."""
    from mmssl.checkpoint import (
        exit_on_untrusted,
        loading_policy,
        trust_from_args,
    )
    from mmssl.evaluation.dense_features import (
        build_dense_backbone,
        preprocess_stats,
    )
    from mmssl.evaluation.load_backbone import (
        BackboneMismatchError,
        load_backbone_weights,
    )

    mean, std, to_rgb = preprocess_stats(cfg)
    if args.features == 'pixels':
        backbone = PatchPixels(_config_int(cfg, 'patch_size', 8))
        return Featurizer(backbone, mean, std, to_rgb), (
            'raw pixels of each patch (baseline, no network)'
        )
    seed = (cfg.get('randomness') or {}).get('seed', 0)
    torch.manual_seed(seed if seed is not None else 0)
    backbone = build_dense_backbone(cfg, args.n_layers)
    backbone.init_weights()
    if not args.checkpoint:
        what = (
            f'no --checkpoint: the RANDOM INIT of {args.config} '
            f'(init_weights(), seed {seed})'
        )
        return Featurizer(backbone, mean, std, to_rgb), what
    trusted = trust_from_args(args)
    with exit_on_untrusted(), loading_policy(trusted, args.checkpoint):
        try:
            loaded = load_backbone_weights(
                backbone,
                args.checkpoint,
                args.prefix,
                trusted,
                args.config,
                network=getattr(args, 'network', None),
            )
        except BackboneMismatchError as err:
            raise SystemExit(f'error: {err}') from None
    return Featurizer(backbone, mean, std, to_rgb), loaded.summary()


def images_short_side(pairs, n: int = 16) -> int:
    """The smallest short side of the first ``n`` training images (0
    when none can be read)."""
    import cv2

    sides = []
    for image_path, _ in pairs[:n]:
        img = cv2.imread(image_path, cv2.IMREAD_UNCHANGED)
        if img is not None:
            sides.append(min(img.shape[:2]))
    return min(sides) if sides else 0


def default_crop(cfg, pairs) -> Tuple[int, str]:
    """The backbone's ``img_size``, or the images' short side (a multiple
    of the patch size) when that is smaller: upscaling 64 px scenes to a
    112 px crop only made the probe 3x slower. Returns the crop and
    where it comes from."""
    size = _config_int(cfg, 'img_size', 224)
    patch = _config_int(cfg, 'patch_size', 1) or 1
    side = images_short_side(pairs) // patch * patch
    if 0 < side < size:
        return side, f"the images' short side; the backbone's is {size}"
    return size, "the backbone's img_size"


def probe_settings(cfg, args: Namespace, pairs=()) -> ProbeSettings:
    """The probe's settings from the flags; without ``--crop`` the crop
    is :func:`default_crop` of the training ``pairs``."""
    crop, source = (
        (args.crop, '--crop')
        if args.crop
        else (default_crop(cfg, list(pairs)))
    )
    args.crop_source = source
    lrs = args.probe_lr if isinstance(args.probe_lr, list) else [args.probe_lr]
    return ProbeSettings(
        crop=crop,
        n_layers=args.n_layers,
        batch_size=args.batch_size,
        iters=args.probe_iters,
        lr=lrs[0],
        lrs=tuple(lrs) if len(lrs) > 1 else (),
    )


def probe_lr_metrics(task: str, out: Dict) -> Dict:
    """``TASK/probe_lr`` and, after a sweep, the held-out score of each
    learning rate (``TASK/heldout/lr_0.001``); prints the sweep."""
    metrics = {f'{task}/probe_lr': out['lr']}
    if out['sweep']:
        what = 'mIoU' if task == 'seg' else 'RMSE'
        sign = 1 if task == 'seg' else -1
        print(f'{task} probe lr sweep (held-out {what} of the training set):')
        for lr, score in out['sweep'].items():
            mark = '  <- chosen' if lr == out['lr'] else ''
            print(f'  lr {lr:g}: {sign * score:.4g}{mark}')
            metrics[f'{task}/heldout/lr_{lr:g}'] = sign * score
    return metrics


def _lrs(settings: ProbeSettings) -> str:
    if settings.lrs:
        return 'best of ' + ', '.join(f'{lr:g}' for lr in settings.lrs)
    return f'{settings.lr:g}'


def _num_classes(args: Namespace) -> int:
    if args.num_classes:
        return args.num_classes
    listing = osp.join(args.data, 'classes.txt')
    if osp.isfile(listing):
        return len(open(listing).read().split())
    return LAYOUT_CLASSES[args.layout]


def run_seg(cfg, args: Namespace) -> Tuple[Dict, list, int]:
    from mmssl.evaluation.dense_data import limit, seg_pairs
    from mmssl.evaluation.seg_probe import run_seg_probe

    layout = args.layout or 'ade20k'
    args.layout = layout
    train = limit(seg_pairs(args.data, 'train', layout), args.max_train)
    val = limit(seg_pairs(args.data, 'val', layout), args.max_val)
    args.counts = dict(train=len(train), val=len(val))
    featurizer, what = dense_featurizer(cfg, args)
    print(f'Loaded {what}')
    k = _num_classes(args)
    settings = probe_settings(cfg, args, train)
    print(
        f'seg probe: {len(train)} training / {len(val)} validation images '
        f'of {args.data} ({layout}, {k} classes), crop {settings.crop} '
        f'({args.crop_source}), '
        f'last {args.n_layers} layer(s), {settings.iters} steps, '
        f'lr {_lrs(settings)}'
    )
    out = run_seg_probe(
        featurizer,
        train,
        val,
        k,
        reduce_zero_label=layout == 'ade20k' and not args.keep_zero_label,
        settings=settings,
    )
    metrics = {f'seg/{key}': v for key, v in out['metrics'].items()}
    metrics.update(probe_lr_metrics('seg', out))
    return metrics, out['samples'], k


def run_depth(cfg, args: Namespace) -> Tuple[Dict, list, int]:
    from mmssl.evaluation.dense_data import depth_pairs, limit
    from mmssl.evaluation.depth_probe import run_depth_probe

    layout = args.layout or 'folder'
    train = limit(depth_pairs(args.data, 'train', layout), args.max_train)
    val = limit(depth_pairs(args.data, 'val', layout), args.max_val)
    args.counts = dict(train=len(train), val=len(val))
    featurizer, what = dense_featurizer(cfg, args)
    print(f'Loaded {what}')
    settings = probe_settings(cfg, args, train)
    print(
        f'depth probe: {len(train)} training / {len(val)} validation '
        f'images of {args.data} ({layout}), {args.depth_mode}, crop '
        f'{settings.crop} ({args.crop_source}), {settings.iters} steps, '
        f'lr {_lrs(settings)}'
    )
    out = run_depth_probe(
        featurizer,
        train,
        val,
        settings,
        mode=args.depth_mode,
        n_bins=args.n_bins,
        max_depth=args.max_depth,
        with_cls=not args.no_cls and args.features != 'pixels',
    )
    metrics = {f'depth/{key}': v for key, v in out['metrics'].items()}
    metrics.update(probe_lr_metrics('depth', out))
    return metrics, out['samples'], 0


def run_knn_task(args: Namespace) -> Dict:
    """kNN (``--task knn``) or kNN + linear (``--task linear``) on
    ``DATA/train`` (bank) and ``DATA/val`` (queries), or the config's."""
    from mmssl.evaluation.tasks.knn_eval import run_knn

    data = args.data
    knn_args = Namespace(
        config=args.config,
        checkpoint=args.checkpoint,
        prefix=args.prefix,
        network=getattr(args, 'network', None),
        train_folder=osp.join(data, 'train') if data else None,
        val_folder=osp.join(data, 'val') if data else None,
        img_size=args.crop,
        batch_size=None,
        num_workers=0,
        k=None,
        work_dir=args.work_dir,
        bn_recalibrate=False,
        linear=args.task == 'linear',
        linear_wd=5e-3,
        pool='auto',
        trusted=args.trusted,
        cfg_options=args.cfg_options,
        allow_new_keys=args.allow_new_keys,
        threads=args.threads,
        folder_flags='--data ROOT (ROOT/train/<class>/<image> the bank, '
        'ROOT/val/<class>/<image> the queries)',
    )
    args.counts = {}
    metrics = run_knn(knn_args, counts=args.counts)
    return {k: float(v) for k, v in metrics.items()}


def _set_data_folder(loader, root: str, split: str) -> None:
    """Point a dataloader's dataset, through wrappers such as
    ``LabelSubset`` (``dataset=dict(dataset=...)``), at ``root/split``."""
    dataset = loader.dataset
    while 'data_root' not in dataset and 'dataset' in dataset:
        dataset = dataset.dataset
    dataset.data_root = root
    dataset.data_prefix = split


def _finetune_prefix(checkpoint: str, trusted, network) -> tuple:
    """``(prefix, words)``: what stands before ``backbone.`` in the keys
    of the network taken (``'teacher.'`` for a DINO-family teacher, ``''``
    for the online network), and that network in words."""
    from mmssl.checkpoint import (
        describe_network,
        find_backbone_prefix,
        load_checkpoint,
        unwrap_state_dict,
    )

    state = unwrap_state_dict(load_checkpoint(checkpoint, trusted=trusted))
    try:
        found = find_backbone_prefix(state, network=network)
    except ValueError:
        if network is not None:
            raise
        return '', 'bare backbone keys'
    if not found.endswith('backbone.'):
        if network is not None:
            raise ValueError(
                f'--task finetune loads ...backbone. keys; the {network} '
                f'network of {checkpoint} is at {found}: publish it first '
                '(tools/model_converters/publish_model.py --backbone-only '
                f'--network {network}) and fine-tune from that file.'
            )
        found = 'backbone.'
    return found[: -len('backbone.')], describe_network(found, state)


def run_finetune(cfg, args: Namespace) -> Dict:
    """Fine-tune ``args.checkpoint`` end to end with a fine-tune config
    (``configs/benchmarks/finetune/``) and return its validation top-1.

    The checkpoint's backbone (the teacher's where there is one) loads
    into the classifier through the config's ``PretrainedStrip`` init
    (load report, ``min_match``); no
    checkpoint trains the random init, said so. ``args.data`` is an
    ImageNet-style root with ``train/`` and ``val/`` class folders.

    Raises:
        ValueError: ``cfg`` is not an ``ImageClassifier`` config.
    """
    from mmssl.engine.preflight import build_train_runner
    from mmssl.engine.runner.workers import set_threads_in_cfg

    model = cfg.model
    if model.get('type') != 'ImageClassifier':
        raise ValueError(
            f'--task finetune takes a fine-tune config (an ImageClassifier, '
            f'e.g. configs/benchmarks/finetune/*.py); {args.config} builds '
            f'{model.get("type")!r}.'
        )
    if args.checkpoint:
        model.init_cfg = dict(
            model.get('init_cfg') or {}, type='PretrainedStrip'
        )
        model.init_cfg.checkpoint = args.checkpoint
        prefix, words = args.prefix, f'prefix {args.prefix!r}'
        if prefix is None:
            prefix, words = _finetune_prefix(
                args.checkpoint, args.trusted, getattr(args, 'network', None)
            )
        if prefix:
            model.init_cfg.prefix = prefix
        print(f'fine-tuning from {args.checkpoint}: {words}')
    else:
        model.init_cfg = None
        print('fine-tuning from RANDOM INIT (no --checkpoint)')
    if args.data:
        for split in ('train', 'val'):
            if cfg.get(f'{split}_dataloader'):
                _set_data_folder(cfg[f'{split}_dataloader'], args.data, split)
        cfg.test_dataloader = cfg.test_cfg = cfg.test_evaluator = None
    cfg.work_dir = args.work_dir
    set_threads_in_cfg(cfg, args.threads)
    runner = build_train_runner(cfg)
    runner.train()
    metrics = runner.val_loop_once()
    top1 = [v for k, v in metrics.items() if k.endswith('top1')]
    out = {
        f'finetune/{k.split("/")[-1]}': float(v) for k, v in metrics.items()
    }
    if top1:
        out['finetune/top1'] = float(top1[0])
    return out
