"""kNN top-1/top-5 of any checkpoint on any labelled folders (or a config's).

Data: the config's ``test_dataloader`` / ``test_evaluator`` (e.g.
``configs/_base_/datasets/demo_knn.py``: bank = data/demo/train, queries =
data/demo/val), or two labelled folders ``<root>/<class>/<image>`` given
with ``--train-folder`` (the feature bank) and ``--val-folder`` (the
queries). Folder images are read with the training decoder (8/16-bit,
grey, any size; bad files are skipped and named), resized on the short
side and centre-cropped to ``--img-size``.

Weights: without ``--checkpoint`` the model is evaluated right after
``init_weights()`` with the config's seed (the "same network at random
init" baseline quoted in the READMEs). ``--checkpoint`` takes any
checkpoint: a training checkpoint of the config's algorithm (loaded
whole), or anything holding the backbone (a ``publish_model.py
--backbone-only`` file, the teacher of a DINO-family checkpoint, ...):
its backbone weights are found (teacher first, or ``--prefix``) and
loaded into the model's backbone, with a report of matched and missing
keys.

    python tools/misc/knn_eval.py \
        configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py
    python tools/misc/knn_eval.py CONFIG --checkpoint work_dirs/x/epoch_6.pth
    python tools/misc/knn_eval.py \
        configs/benchmarks/knn/knn_vit-small-p14_custom.py \
        --checkpoint CKPT --train-folder /data/train --val-folder /data/val

``--bn-recalibrate`` re-estimates every BatchNorm's running mean and
variance on the kNN bank (the training split), with the weights left as
they are, before the kNN (see ``mmssl.evaluation.bn_recalibration``).
At random init this is the fair baseline for BatchNorm networks: a run
at learning rate 0 already adapts the running statistics to the data,
and that alone moves kNN by many points. The bank is read with the
kNN (test) pipeline, the one the features are then extracted with, so
the statistics fit exactly the images that are compared (the training
pipeline's crops and colour jitter would shift them), in one pass,
shuffled with a fixed seed (batches sorted by class folder would give
class-specific batch statistics to the layers below).

    python tools/misc/knn_eval.py CONFIG --bn-recalibrate

``--linear`` adds a linear probe on the same frozen features: a
multinomial logistic regression fitted on the bank and scored on the
queries (``mmssl.evaluation.LinearProbeAccuracy``; deterministic L-BFGS on
standardised features, L2 weight ``--linear-wd``). It needs no probe
config, so it fits any backbone (HiViT, Swin, MixMIM, sparse ResNet...);
masked-image models are judged by a linear probe rather than kNN (He et
al. 2022, Sec. 4). Both kNN and linear top-1/top-5 are printed.

    python tools/misc/knn_eval.py CONFIG --checkpoint CKPT --linear

``--pool patch-mean`` probes the mean of the patch tokens instead of the
first (CLS) token of a ViT (BEiT v1 trains no loss on its CLS token).

The checkpoint is read with mmssl's safe loader; one that pickles more than
tensors and mmengine's own types is refused unless ``--trusted``.
"""

import argparse
import os.path as osp
import sys
import tempfile

sys.path.insert(0, osp.abspath(osp.join(osp.dirname(__file__), '..', '..')))

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from knn_eval_options import pool_patch_mean, set_metrics  # noqa: E402

from mmssl.checkpoint import (  # noqa: E402
    add_trusted_argument,
    exit_on_untrusted,
    loading_policy,
    trust_from_args,
)
from mmssl.utils import register_all_modules  # noqa: E402
from mmssl.utils.cli import (  # noqa: E402
    add_cfg_options_arguments,
    load_tool_config,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config')
    parser.add_argument(
        '--checkpoint',
        default=None,
        help='any checkpoint holding the model or its backbone; random '
        'init if omitted',
    )
    parser.add_argument(
        '--prefix',
        default=None,
        help="backbone prefix in the checkpoint ('' for a bare backbone); "
        'default: the whole model when the keys fit, else found (teacher '
        'first)',
    )
    parser.add_argument('--train-folder', help='labelled bank folder')
    parser.add_argument('--val-folder', help='labelled query folder')
    parser.add_argument(
        '--img-size',
        type=int,
        default=None,
        help="crop side for folders (default: the backbone's img_size, "
        'else 224)',
    )
    parser.add_argument('--batch-size', type=int, default=None)
    parser.add_argument('--num-workers', type=int, default=None)
    parser.add_argument('--k', type=int, default=None, help='neighbours')
    parser.add_argument('--work-dir', default=None, help='for the log')
    parser.add_argument(
        '--bn-recalibrate',
        action='store_true',
        help='re-estimate BatchNorm running stats on the kNN bank (one '
        'pass, test pipeline, no weight change) before the kNN',
    )
    parser.add_argument(
        '--linear',
        action='store_true',
        help='also fit a linear probe (logistic regression) on the bank '
        'features and report its accuracy on the queries',
    )
    parser.add_argument(
        '--linear-wd',
        type=float,
        default=5e-3,
        help='L2 weight of the linear probe (default 5e-3)',
    )
    parser.add_argument(
        '--pool',
        choices=('auto', 'patch-mean'),
        default='auto',
        help="ViT tokens: 'auto' takes the first (CLS) token, 'patch-mean' "
        'the mean of the others',
    )
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.linear_wd < 0:
        parser.error(f'--linear-wd must be >= 0, got {args.linear_wd}')
    if bool(args.train_folder) != bool(args.val_folder):
        parser.error('give both --train-folder and --val-folder')
    return args


def _img_size(cfg, requested) -> int:
    if requested:
        return int(requested)
    size = (cfg.model.get('backbone') or {}).get('img_size', 224)
    return int(size[0] if isinstance(size, (list, tuple)) else size)


def use_folders(cfg, args) -> None:
    """Point the config's kNN test at ``--train-folder``/``--val-folder``."""
    from mmssl.evaluation.folders import (
        config_loader,
        eval_pipeline,
        folder_classes,
        labelled_folder_dataset,
    )

    size = _img_size(cfg, args.img_size)
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
        f'{args.val_folder}, {len(classes)} classes, {size}px crops'
    )


def prepare_cfg(cfg, args) -> None:
    """Flags -> config; the tool loads weights itself (no init_cfg)."""
    if args.train_folder:
        use_folders(cfg, args)
    if 'test_dataloader' not in cfg:
        raise SystemExit(
            'error: the config has no test_dataloader; give labelled '
            'folders with --train-folder DIR --val-folder DIR.'
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


def _backbones(model) -> list:
    """``[(path, module)]`` of every backbone copy (student, teacher...)."""
    from mmssl.checkpoint import STUDENT_BACKBONE_PATHS, TEACHER_BACKBONE_PATHS

    found = []
    for path in TEACHER_BACKBONE_PATHS + STUDENT_BACKBONE_PATHS:
        try:
            module = model.get_submodule(path)
        except AttributeError:
            continue
        if any(True for _ in module.parameters()):
            found.append((path, module))
    return found or [('', model)]


def load_weights(model, checkpoint: str, prefix, trusted) -> str:
    """Load the whole model, or its backbone(s), from ``checkpoint``.

    A checkpoint whose keys cover the model (a training checkpoint of the
    config) is loaded whole. Otherwise the backbone weights (a bare
    backbone, or those under ``prefix`` or found teacher-first) go into
    every backbone copy of the model, so the features agree whichever
    copy the algorithm extracts them with.

    Returns:
        str: What was loaded, for the output.
    """
    from mmssl.checkpoint import (
        load_checkpoint,
        load_pretrained,
        select_backbone,
        strip_prefix,
        unwrap_state_dict,
    )

    state = unwrap_state_dict(load_checkpoint(checkpoint, trusted=trusted))
    if state and all(k.startswith('module.') for k in state):
        state = strip_prefix(state, 'module.')
    own = model.state_dict()
    if prefix is None and sum(k in state for k in own) >= 0.9 * len(own):
        report = load_pretrained(model, state, strip_prefixes=())
        return f'whole model: {report.summary(3)}'
    backbones = _backbones(model)
    keys = backbones[0][1].state_dict()
    if prefix is not None:
        weights = strip_prefix(state, prefix) if prefix else state
    elif sum(k in state for k in keys) >= 0.9 * len(keys):
        weights = state  # a bare backbone
    else:
        try:
            weights = select_backbone(state)
        except ValueError as err:
            raise SystemExit(f'error: {err}') from None
    lines = []
    for path, module in backbones:
        report = load_pretrained(module, weights, strip_prefixes=())
        if not report.matched:
            raise SystemExit(
                f'error: no weight of {checkpoint} fits the backbone '
                f'{path or "model"} ({report.summary(5)}); pass --prefix.'
            )
        lines.append(f'backbone {path or "(model)"}: {report.summary(3)}')
    return '\n'.join(lines)


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


def main(argv=None) -> dict:
    args = parse_args(argv)
    from mmssl.engine.runner import build_runner

    register_all_modules()
    cfg = load_tool_config(args.config, args.cfg_options, args.allow_new_keys)
    prepare_cfg(cfg, args)
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
            print(
                'Loaded '
                + load_weights(
                    runner.model, args.checkpoint, args.prefix, trusted
                )
            )
        if args.bn_recalibrate:
            print(bn_recalibrate(runner))
        if args.pool == 'patch-mean':
            pool_patch_mean(runner.model)
        metrics = runner.test()
    for path, reason in sorted(skipped.bad.items()):
        print(f'skipped bad file {path}: {reason}')
    print({k: round(float(v), 2) for k, v in metrics.items()})
    return metrics


if __name__ == '__main__':
    main()
