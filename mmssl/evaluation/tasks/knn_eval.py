"""The kNN / linear evaluation of ``tools/misc/knn_eval.py`` and
``tools/eval.py --task knn|linear``: config preparation, weights, run.

Data: the config's ``test_dataloader`` / ``test_evaluator``, or two
labelled folders ``<root>/<class>/<image>`` (``--train-folder`` the bank,
``--val-folder`` the queries). Weights: :func:`load_weights` (the one
evaluation loader, :mod:`mmssl.evaluation.load_backbone`), or the config's
random init, said so.
"""

import tempfile

from mmssl.evaluation.feature_model import feature_model_cfg
from mmssl.evaluation.knn_options import pool_patch_mean, set_metrics
from mmssl.evaluation.load_backbone import load_backbone_weights


def use_folders(cfg, args) -> None:
    """Point the config's kNN test at ``--train-folder``/``--val-folder``."""
    from mmssl.evaluation.folders import (
        config_loader,
        eval_img_size,
        eval_pipeline,
        folder_classes,
        labelled_folder_dataset,
    )

    size, source = eval_img_size(cfg, args.img_size)
    classes = folder_classes(args.train_folder)
    # a multi-channel config reads the folders with its own loader
    pipeline = eval_pipeline(size, loader=config_loader(cfg))
    loader = dict(cfg.get('test_dataloader') or {})
    cfg.test_dataloader = dict(
        batch_size=loader.get('batch_size', 64),
        num_workers=loader.get('num_workers', 2),
        sampler=dict(type='DefaultSampler', shuffle=False),
        collate_fn=dict(type='default_collate'),
        dataset=dict(
            type='KNNDataset',
            bank=labelled_folder_dataset(
                args.train_folder, size, classes, pipeline
            ),
            query=labelled_folder_dataset(
                args.val_folder, size, classes, pipeline
            ),
        ),
    )
    evaluator = cfg.get('test_evaluator') or {}
    if not isinstance(evaluator, dict) or evaluator.get('type') != (
        'KNNAccuracy'
    ):
        cfg.test_evaluator = dict(type='KNNAccuracy', k=20, topk=(1, 5))
    cfg.test_cfg = dict(type='FeatureTestLoop')
    print(
        f'kNN on folders: bank {args.train_folder}, queries '
        f'{args.val_folder}, {len(classes)} classes, {size}px crops '
        f'({source})'
    )


def prepare_cfg(cfg, args) -> None:
    """Flags -> config; the tool loads weights itself (no init_cfg)."""
    if args.train_folder:
        use_folders(cfg, args)
    if 'test_dataloader' not in cfg:
        flags = getattr(
            args, 'folder_flags', '--train-folder DIR --val-folder DIR'
        )
        raise SystemExit(
            f'error: {args.config} has no test_dataloader; give labelled '
            f'folders with {flags}.'
        )
    if args.batch_size:
        cfg.test_dataloader.batch_size = args.batch_size
    if args.num_workers is not None:
        cfg.test_dataloader.num_workers = args.num_workers
        if args.num_workers == 0:
            cfg.test_dataloader.persistent_workers = False
    set_metrics(cfg, args)
    cfg.work_dir = args.work_dir or tempfile.mkdtemp(prefix='knn_eval_')
    cfg.load_from = None
    cfg.resume = False
    # benchmark configs load the backbone from init_cfg with a hook; the
    # tool loads --checkpoint itself
    backbone = cfg.model.get('backbone') or {}
    init = backbone.get('init_cfg') or {}
    if isinstance(init, dict) and init.get('type') == 'Pretrained':
        backbone['init_cfg'] = None
    hooks = [
        h
        for h in cfg.get('custom_hooks') or []
        if h.get('type') != 'PretrainedInitHook'
    ]
    cfg.custom_hooks = hooks
    cfg.model, note = feature_model_cfg(cfg.model)
    if note:
        print(note)


def _skipped_files_hook():
    """A hook collecting the bad files the test dataloader skipped."""
    from mmengine.hooks import Hook

    class SkippedFiles(Hook):
        priority = 'LOWEST'

        def __init__(self) -> None:
            self.bad = {}

        def after_test_iter(
            self, runner, batch_idx, data_batch=None, outputs=None
        ) -> None:
            for sample in (data_batch or {}).get('data_samples', []):
                for path, reason in sample.get('skipped_files', None) or []:
                    self.bad.setdefault(path, reason)

    return SkippedFiles()


def bn_recalibrate(runner) -> str:
    """Recalibrate BatchNorm on the kNN bank; return what was done."""
    import torch
    from torch.utils.data import DataLoader

    from mmssl.evaluation.bn_recalibration import recalibrate_batchnorm

    loader = runner.test_dataloader
    bank = getattr(loader.dataset, 'bank', None)
    if bank is None:
        raise SystemExit(
            f'error: --bn-recalibrate needs a KNNDataset (bank + query) '
            f'as test dataset, not {type(loader.dataset).__name__}; give '
            '--train-folder DIR --val-folder DIR.'
        )
    batches = DataLoader(
        bank,
        batch_size=loader.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
        num_workers=0,
        collate_fn=loader.collate_fn,
    )
    try:
        done = recalibrate_batchnorm(runner.model, batches)
    except ValueError as err:
        raise SystemExit(f'error: {err}') from None
    unused = f', {len(done["unused"])} not reached' if done['unused'] else ''
    return (
        f'BatchNorm recalibrated on the kNN bank: {done["layers"]} layers'
        f'{unused}, {done["images"]} images in {done["batches"]} batches'
    )


def load_weights(
    model,
    checkpoint: str,
    prefix=None,
    trusted=None,
    config='the config',
    network=None,
) -> str:
    """Load ``checkpoint``'s backbone (the teacher, else the online
    network, or ``network``) into every backbone copy of ``model``; the
    load report, naming the network, for the output.

    Raises:
        SystemExit: The file does not hold the config's backbone (one
            line: what matched, which config to pass).
    """
    from mmssl.evaluation.load_backbone import BackboneMismatchError

    try:
        loaded = load_backbone_weights(
            model, checkpoint, prefix, trusted, config=config, network=network
        )
    except BackboneMismatchError as err:
        raise SystemExit(f'error: {err}') from None
    return loaded.summary()


def dataset_counts(dataset) -> dict:
    """``{'bank': N, 'queries': M}`` of a kNN dataset, else ``{'images':
    N}``."""
    bank = getattr(dataset, 'bank', None)
    query = getattr(dataset, 'query', None)
    if bank is not None and query is not None:
        return dict(bank=len(bank), queries=len(query))
    return dict(images=len(dataset))


def majority_floor(dataset):
    """Top-1 (percent) of answering the bank's most frequent class for
    every query: the floor of the data; None without labels."""
    import numpy as np

    bank = getattr(dataset, 'bank', None)
    query = getattr(dataset, 'query', None)
    try:
        bank_labels = np.asarray(bank.get_gt_labels())
        query_labels = np.asarray(query.get_gt_labels())
    except (AttributeError, TypeError, KeyError):
        return None
    if not len(bank_labels) or not len(query_labels):
        return None
    majority = np.bincount(bank_labels.astype(np.int64)).argmax()
    return float((query_labels == majority).mean() * 100)


def run_knn(args, counts: dict = None) -> dict:
    """Prepare the config from ``args`` (see knn_eval.py), load, test;
    ``counts`` (when given) gets :func:`dataset_counts` of the test set.

    The caller fills the registries first
    (:func:`mmssl.setup_env.register_all_modules`), as the tools do.
    """
    from mmssl.checkpoint import (
        exit_on_untrusted,
        loading_policy,
        trust_from_args,
    )
    from mmssl.config import load_config
    from mmssl.engine.runner import build_runner
    from mmssl.engine.runner.workers import set_threads_in_cfg

    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    prepare_cfg(cfg, args)
    set_threads_in_cfg(cfg, getattr(args, 'threads', None))
    runner = build_runner(cfg)
    skipped = _skipped_files_hook()
    runner.register_hook(skipped)
    trusted = trust_from_args(args)
    with (
        exit_on_untrusted(),
        loading_policy(trusted, args.checkpoint or 'init_cfg'),
    ):
        runner.model.init_weights()
        if args.checkpoint:
            what = load_weights(
                runner.model,
                args.checkpoint,
                args.prefix,
                trusted,
                config=args.config,
                network=getattr(args, 'network', None),
            )
            print(f'Loaded {what}')
        else:
            print(
                'No --checkpoint: evaluating the RANDOM INIT of '
                f'{args.config} (init_weights(), seed '
                f'{(cfg.get("randomness") or {}).get("seed")}).'
            )
        if args.bn_recalibrate:
            print(bn_recalibrate(runner))
        if args.pool == 'patch-mean':
            pool_patch_mean(runner.model)
        metrics = runner.test()
    dataset = runner.test_dataloader.dataset
    if counts is not None:
        counts.update(dataset_counts(dataset))
    floor = majority_floor(dataset)
    if floor is not None:
        metrics['knn/floor_top1'] = floor
    for path, reason in sorted(skipped.bad.items()):
        print(f'skipped bad file {path}: {reason}')
    return metrics


__all__ = [
    'bn_recalibrate',
    'majority_floor',
    'load_weights',
    'pool_patch_mean',
    'prepare_cfg',
    'run_knn',
    'set_metrics',
    'use_folders',
]
