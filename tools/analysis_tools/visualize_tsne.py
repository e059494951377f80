"""t-SNE of a backbone's features, coloured by label or by source dataset.

    python tools/analysis_tools/visualize_tsne.py CONFIG --checkpoint CKPT \
        --work-dir DIR [--dataset-split query|bank|all] [--data-root D ...] \
        [--max-num-samples N] [--perplexity P] [--n-iter I] \
        [--feature cls|pooled|stage:K] [--color-by label|source] \
        [--img-size S]

MMSelfSup's flags work too: ``--vis-stage backbone`` (the only stage:
mmssl embeds backbone features, chosen with ``--feature``),
``--max-num-class N`` (samples of labels below N), ``--deterministic``,
``--n-components``, ``--early-exaggeration``, ``--learning-rate``,
``--n-iter-without-progress`` and ``--init`` (scikit-learn's TSNE); the
work dir defaults to ``work_dirs/<config name>/tsne``.

Data: the config's ``test_dataloader`` (else ``val_dataloader``); for a
``KNNDataset`` the ``query`` split by default (``bank`` or ``all``), or
one or more image folders given with ``--data-root`` (labels from their
sub-folders, -1 for a flat folder; each folder is one "source"). Folder
images are read like training data (``LoadImageRobust``: 8/16-bit, grey,
RGBA, any size; a multi-channel config's own ``LoadMultiChannelTiff``,
same channels and scaling), resized on the short side and centre-cropped to
``--img-size`` (aspect kept, batches of mixed sizes stack); bad files are
skipped and named. Writes ``tsne.png``,
``features.npy`` (N, C), ``labels.npy`` (N, ), ``sources.npy`` (N, ) and
``tsne.npy`` (N, 2) into the work dir.
"""

import argparse
import copy
import os
import os.path as osp
import sys

import numpy as np


def parse_args(argv=None):
    from mmssl.checkpoint import add_trusted_argument
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='config file')
    parser.add_argument('--checkpoint', help='checkpoint of the algorithm')
    parser.add_argument(
        '--work-dir',
        help='output folder (default: work_dirs/<config name>/tsne)',
    )
    parser.add_argument(
        '--dataset-split',
        '--split',
        default='query',
        choices=['query', 'bank', 'all'],
        help='split of a KNNDataset (all: bank + query, source = split)',
    )
    parser.add_argument(
        '--data-root',
        nargs='+',
        default=None,
        help='image folder(s) <root>/<class>/* (or flat, unlabelled) '
        'instead of the config data; read like training data, bad files '
        'skipped and named, centre-cropped to --img-size',
    )
    parser.add_argument(
        '--img-size',
        type=int,
        default=None,
        help="crop side for --data-root (default: the backbone's "
        'img_size, else the training crop, else 224)',
    )
    parser.add_argument('--max-num-samples', type=int, default=1000)
    parser.add_argument('--perplexity', type=float, default=30.0)
    parser.add_argument('--n-iter', type=int, default=1000)
    parser.add_argument(
        '--feature', default='pooled', help='cls | pooled | stage:K'
    )
    parser.add_argument(
        '--color-by', default='label', choices=['label', 'source']
    )
    parser.add_argument(
        '--backbone-path',
        default=None,
        help='module to take features from (default: the '
        "teacher's backbone if any, else the algorithm's "
        'extract_feat)',
    )
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--seed', type=int, default=0)
    _add_mmselfsup_arguments(parser)
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    return parser.parse_args(argv)


def _add_mmselfsup_arguments(parser) -> None:
    """MMSelfSup 1.x's visualize_tsne.py flags."""
    parser.add_argument(
        '--vis-stage',
        default='backbone',
        help="backbone only (MMSelfSup's neck/pre_logits: no counterpart; "
        'choose backbone features with --feature)',
    )
    parser.add_argument(
        '--max-num-class',
        type=int,
        default=None,
        help='embed only samples whose label is below N',
    )
    parser.add_argument(
        '--deterministic',
        action='store_true',
        help='deterministic torch algorithms for the feature pass',
    )
    parser.add_argument('--n-components', type=int, default=2, choices=[2, 3])
    parser.add_argument('--early-exaggeration', type=float, default=None)
    parser.add_argument(
        '--learning-rate',
        default=None,
        help="a number, or 'auto' (the default)",
    )
    parser.add_argument('--n-iter-without-progress', type=int, default=None)
    parser.add_argument(
        '--init', default=None, choices=['pca', 'random'], help='default pca'
    )


def check_mmselfsup_flags(args) -> None:
    """Stop at MMSelfSup flag values mmssl has no counterpart for; fill
    the default work dir; apply ``--deterministic``."""
    if args.vis_stage != 'backbone':
        sys.exit(
            f'error: --vis-stage {args.vis_stage} has no mmssl '
            'counterpart: t-SNE embeds backbone features; pick them with '
            '--feature cls|pooled|stage:K (or --backbone-path MODULE).'
        )
    if args.work_dir is None:
        stem = osp.splitext(osp.basename(args.config))[0]
        args.work_dir = osp.join('work_dirs', stem, 'tsne')
    if args.learning_rate not in (None, 'auto'):
        args.learning_rate = float(args.learning_rate)
    if args.deterministic:
        import torch

        torch.use_deterministic_algorithms(True, warn_only=True)


def tsne_options(args) -> dict:
    """scikit-learn TSNE arguments given on the command line."""
    return dict(
        n_components=args.n_components,
        early_exaggeration=args.early_exaggeration,
        learning_rate=args.learning_rate,
        n_iter_without_progress=args.n_iter_without_progress,
        init=args.init,
    )


def folder_dataset_cfgs(roots, img_size: int, loader=None) -> list:
    """Dataset configs for ``--data-root`` folders, read like training.

    Folders with class sub-folders are labelled (classes merged by name
    over all folders); a flat folder is unlabelled (label -1). ``loader``
    is the config's multi-channel loader (``config_loader``), if any.
    """
    from mmssl.evaluation.folders import (
        eval_pipeline,
        folder_classes,
        labelled_folder_dataset,
        unlabelled_folder_dataset,
    )

    per_root = {}
    for root in roots:
        if not osp.isdir(root):
            raise FileNotFoundError(f'--data-root {root} is not a folder.')
        try:
            per_root[root] = folder_classes(root)
        except FileNotFoundError:
            per_root[root] = []
    classes = sorted({c for names in per_root.values() for c in names})
    pipeline = eval_pipeline(img_size, loader=loader)
    return [
        labelled_folder_dataset(root, img_size, classes, pipeline)
        if names
        else unlabelled_folder_dataset([root], img_size, pipeline)
        for root, names in per_root.items()
    ]


def build_datasets(cfg, args) -> list[tuple[str, object]]:
    """``[(source name, dataset), ...]`` to draw samples from."""
    from mmssl.evaluation.folders import config_loader, eval_img_size
    from mmssl.registry import DATASETS

    loader = cfg.get('test_dataloader') or cfg.get('val_dataloader')
    dataset_cfg = copy.deepcopy(loader['dataset']) if loader else None
    if args.data_root:
        size, _ = eval_img_size(cfg, args.img_size)
        return [
            (osp.basename(osp.normpath(root)), DATASETS.build(ds))
            for root, ds in zip(
                args.data_root,
                folder_dataset_cfgs(args.data_root, size, config_loader(cfg)),
            )
        ]
    if dataset_cfg is None:
        raise ValueError(
            'The config has no test_dataloader or '
            'val_dataloader; give image folders with '
            '--data-root.'
        )
    if dataset_cfg.get('type') == 'KNNDataset':
        splits = (
            ['bank', 'query']
            if args.dataset_split == 'all'
            else [args.dataset_split]
        )
        return [(s, DATASETS.build(dataset_cfg[s])) for s in splits]
    return [(dataset_cfg.get('type', 'dataset'), DATASETS.build(dataset_cfg))]


def drop_stand_ins(feats, samples, src_ids):
    """Name the bad files skipped while loading; drop their stand-ins.

    ``ImageFolderDataset`` replaces a bad file by another image, which can
    then appear twice; each image is kept once.
    """
    keep, seen = [], set()
    for i, sample in enumerate(samples):
        for path, reason in sample.get('skipped_files', None) or []:
            print(f'skipped bad file {path}: {reason}', flush=True)
        key = sample.get('img_path', None)
        if key is not None and key in seen:
            continue
        seen.add(key)
        keep.append(i)
    if len(keep) == len(samples):
        return feats, samples, src_ids
    return (
        feats[keep],
        [samples[i] for i in keep],
        [src_ids[i] for i in keep],
    )


def sample_loader(sources, args):
    """A dataloader over a reproducible sample, even over the sources.

    Returns:
        tuple: The dataloader and the source index of each sample.
    """
    from mmengine.runner import Runner
    from torch.utils.data import ConcatDataset, Subset

    rng = np.random.default_rng(args.seed)
    total = sum(len(d) for _, d in sources)
    parts, src_ids = [], []
    for i, (_, ds) in enumerate(sources):
        n = len(ds)
        take = (
            n
            if total <= args.max_num_samples
            else max(1, round(args.max_num_samples * n / total))
        )
        idx = np.sort(rng.choice(n, size=min(take, n), replace=False))
        parts.append(Subset(ds, idx.tolist()))
        src_ids += [i] * len(idx)
    loader = Runner.build_dataloader(
        dict(
            batch_size=args.batch_size,
            num_workers=0,
            dataset=ConcatDataset(parts),
            sampler=dict(type='DefaultSampler', shuffle=False),
            collate_fn=dict(type='default_collate'),
        )
    )
    return loader, src_ids


def make_feature_fn(model, args):
    """``fn(model, inputs) -> (B, C)`` from the backbone to evaluate."""
    from mmssl.checkpoint import TEACHER_BACKBONE_PATHS
    from mmssl.models.utils import find_backbone
    from mmssl.visualization.tsne import select_features

    backbone, path = (
        find_backbone(model, path=args.backbone_path)
        if (args.backbone_path is not None)
        else find_backbone(model)
    )
    if args.backbone_path is None and path not in TEACHER_BACKBONE_PATHS:

        def raw(m, x):
            return m(x, mode='tensor')
    else:

        def raw(m, x):
            return backbone(x)

    def feature_fn(m, x):
        return select_features(raw(m, x), args.feature)

    return feature_fn


def as_arrays(feats, samples, src_ids, args) -> tuple:
    """Features, labels (-1: none) and source ids as numpy arrays, only
    the classes below ``--max-num-class`` when given."""
    labels = np.array(
        [
            int(s.gt_label.reshape(-1)[0]) if 'gt_label' in s else -1
            for s in samples
        ]
    )
    src = np.array(src_ids)
    feats = feats.float().numpy()
    if args.max_num_class is not None:
        from mmssl.visualization.tsne import first_classes

        keep = first_classes(labels, args.max_num_class)
        feats, labels, src = feats[keep], labels[keep], src[keep]
    return feats, labels, src


def main(argv=None) -> dict:
    args = parse_args(argv)
    check_mmselfsup_flags(args)
    from mmssl.apis import init_model
    from mmssl.checkpoint import exit_on_untrusted, trust_from_args
    from mmssl.config import load_config
    from mmssl.engine.runner.feature_extraction import extract_features
    from mmssl.visualization.tsne import plot_embedding, run_tsne

    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    with exit_on_untrusted():
        model = init_model(
            cfg,
            args.checkpoint,
            device=args.device,
            trusted=trust_from_args(args),
        )
    sources = build_datasets(cfg, args)

    loader, src_ids = sample_loader(sources, args)
    feature_fn = make_feature_fn(model, args)
    feats, samples = extract_features(
        model, loader, feature_fn, desc='t-SNE features'
    )
    feats, samples, src_ids = drop_stand_ins(feats, samples, src_ids)
    feats, labels, src = as_arrays(feats, samples, src_ids, args)
    os.makedirs(args.work_dir, exist_ok=True)
    emb = run_tsne(
        feats, args.perplexity, args.n_iter, args.seed, **tsne_options(args)
    )
    np.save(osp.join(args.work_dir, 'features.npy'), feats)
    np.save(osp.join(args.work_dir, 'labels.npy'), labels)
    np.save(osp.join(args.work_dir, 'sources.npy'), src)
    np.save(osp.join(args.work_dir, 'tsne.npy'), emb)

    if args.color_by == 'label':
        classes = list(
            getattr(sources[0][1], 'metainfo', {}).get('classes', []) or []
        )
        groups, names = labels, classes
    else:
        groups, names = src, [name for name, _ in sources]
    title = (
        f'{osp.splitext(osp.basename(args.config))[0]}\n'
        f'{args.feature} features of {len(feats)} images, '
        f'coloured by {args.color_by}'
    )
    png = osp.join(args.work_dir, 'tsne.png')
    plot_embedding(emb, groups, names, png, title=title)
    print(
        f'Wrote {png} and features.npy {feats.shape}, labels.npy, '
        f'sources.npy, tsne.npy to {args.work_dir}'
    )
    return dict(
        png=png, features=feats, labels=labels, sources=src, embedding=emb
    )


if __name__ == '__main__':
    main(sys.argv[1:])
