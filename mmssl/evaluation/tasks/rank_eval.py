"""``tools/eval.py --task rank``: RankMe of a checkpoint, without labels.

The features (one vector per image, as the kNN evaluation pools them) of
a fixed, evenly spaced subset of a folder of images (default: the
config's training folder) give RankMe and the spread
(:mod:`mmssl.evaluation.rank`). With a checkpoint the random init of the
same config is measured on the same images too, so one command answers
"did pretraining spread the features out?"; the picture plots both
singular-value spectra.
"""

import os.path as osp
from argparse import Namespace
from typing import Dict, Optional, Tuple

import numpy as np
import torch


def train_folder(cfg) -> Optional[str]:
    """The first ``data_root`` of the config's training dataset (through
    dataset wrappers), or None."""
    from mmssl.evaluation.folders import train_dataset_cfg

    root = train_dataset_cfg(cfg).get('data_root')
    if isinstance(root, (list, tuple)):
        root = root[0] if root else None
    return root


def dataset_cfg(cfg, folder: str, size: int) -> dict:
    """An unlabelled dataset over ``folder`` read as the config evaluates:
    2D images with the evaluation pipeline at ``size``; volumes with the
    training dataset's type and loading ``preprocess`` (resampling,
    intensity window), then their centre cube of side ``size``
    (:func:`~mmssl.evaluation.folders.volume_eval_dataset`)."""
    from mmssl.evaluation.folders import (
        config_loader,
        eval_pipeline,
        train_dataset_cfg,
        unlabelled_folder_dataset,
        volume_eval_dataset,
        volume_types,
    )

    train = train_dataset_cfg(cfg)
    if not volume_types(train):
        pipeline = eval_pipeline(size, loader=config_loader(cfg))
        return unlabelled_folder_dataset([folder], size, pipeline)
    return volume_eval_dataset(train, size, folder)


def _loader(cfg, folder: str, size: int, max_images: Optional[int]):
    from torch.utils.data import Subset

    from mmssl.engine.runner.runner import SSLRunner
    from mmssl.evaluation.rank import evenly_spaced
    from mmssl.registry import DATASETS

    # one scan of the folder (and one 'N images' line): the subset is a
    # view of the dataset built here
    full = DATASETS.build(
        dict(dataset_cfg(cfg, folder, size), lazy_init=False)
    )
    total = len(full)
    if total < 2:
        raise ValueError(
            f'{folder} holds {total} image(s); RankMe needs at least 2.'
        )
    loader = dict(
        batch_size=64,
        num_workers=0,
        sampler=dict(type='DefaultSampler', shuffle=False),
        collate_fn=dict(type='default_collate'),
        dataset=Subset(full, evenly_spaced(total, max_images)),
    )
    return SSLRunner.build_dataloader(loader, seed=0), total


def _features(model, loader, desc: str, skipped: Dict) -> torch.Tensor:
    """Features of the images read as themselves: a sample that stands
    in for a bad file (the dataset reads another image instead, as in
    training) is left out, and the bad files go to ``skipped``
    (``{path: reason}``)."""
    from mmssl.engine.runner.feature_extraction import extract_features

    try:
        feats, samples = extract_features(model, loader, desc=desc)
    except RuntimeError as err:  # the dataset found no readable image
        if not str(err).startswith('Cannot find a readable image'):
            raise
        raise ValueError(
            f'none of the image files read is a readable image ({err}); '
            'give --data a folder of images.'
        ) from None
    if len(samples) != feats.shape[0]:  # no data samples to tell by
        return feats.float()
    keep = []
    for i, sample in enumerate(samples):
        bad = sample.get('skipped_files', None) or []
        for path, reason in bad:
            skipped.setdefault(path, reason)
        if not bad:
            keep.append(i)
    return feats[keep].float()


def skipped_line(skipped: Dict, folder: str, used: int) -> str:
    """One line for the bad files left out: how many, the first ones."""
    first = '; '.join(
        f'{osp.relpath(p, folder)}: {r}' for p, r in list(skipped.items())[:2]
    )
    more = ', ...' if len(skipped) > 2 else ''
    return (
        f'rank: skipped {len(skipped)} unreadable file(s) of {folder} '
        f'({first}{more}); RankMe on the other {used} images'
    )


def rank_figure(spectra: Dict[str, torch.Tensor]) -> np.ndarray:
    """BGR picture of the normalised singular values (s_k / sum s, log
    scale) of each named spectrum, with its RankMe in the legend."""
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from mmssl.evaluation.rank import EPS, rankme_of_spectrum

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for name, s in spectra.items():
        p = (s / s.sum()).numpy() if float(s.sum()) > 0 else s.numpy()
        value = rankme_of_spectrum(s)
        ax.semilogy(
            np.arange(1, len(p) + 1),
            np.maximum(p, EPS),
            marker='.',
            label=f'{name}: RankMe {value:.1f}',
        )
    ax.set_xlabel('singular value index k')
    ax.set_ylabel('s_k / sum of s')
    ax.set_title('Spectrum of the features (flatter = more directions used)')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.canvas.draw()
    rgba = np.asarray(fig.canvas.buffer_rgba())
    plt.close(fig)
    return np.ascontiguousarray(rgba[..., 2::-1])


def _random_and_trained(cfg, args: Namespace, loader, skipped: Dict) -> Dict:
    """Features of the random init and, with ``args.checkpoint``, of the
    checkpoint, on the same images: ``{'random init': ..., 'trained':
    ...}`` (bad files left out and put in ``skipped``). The checkpoint
    is loaded (and refused when it does not hold the config's backbone)
    before any feature is computed."""
    from mmssl.checkpoint import (
        exit_on_untrusted,
        loading_policy,
        trust_from_args,
    )
    from mmssl.evaluation.feature_model import feature_model_cfg
    from mmssl.evaluation.tasks.knn_eval import load_weights
    from mmssl.registry import MODELS

    seed = (cfg.get('randomness') or {}).get('seed', 0)
    model_cfg, note = feature_model_cfg(cfg.model)
    if note:
        print(note)

    def random_init():
        torch.manual_seed(seed if seed is not None else 0)
        model = MODELS.build(model_cfg)
        model.init_weights()
        return model

    trusted = trust_from_args(args)
    feats = {}
    with (
        exit_on_untrusted(),
        loading_policy(trusted, args.checkpoint or 'init_cfg'),
    ):
        if not args.checkpoint:
            print(
                f'No --checkpoint: the RANDOM INIT of {args.config} '
                f'(init_weights(), seed {seed})'
            )
            feats['random init'] = _features(
                random_init(), loader, 'random init', skipped
            )
            return feats
        model = random_init()
        what = load_weights(
            model,
            args.checkpoint,
            args.prefix,
            trusted,
            args.config,
            getattr(args, 'network', None),
        )
        print(f'Loaded {what}')
        feats['trained'] = _features(model, loader, 'trained', skipped)
        del model
        feats['random init'] = _features(
            random_init(), loader, 'random init', skipped
        )
    return {k: feats[k] for k in ('random init', 'trained')}


def run_rank(cfg, args: Namespace) -> Tuple[Dict, np.ndarray]:
    """RankMe of ``args.checkpoint`` (and of the random init) on the
    images of ``args.data`` or of the config's training folder.

    Returns:
        tuple: ``rank/*`` metrics and the spectrum picture.

    Raises:
        FileNotFoundError: No folder to read.
        SystemExit: The checkpoint does not hold the config's backbone.
    """
    from mmssl.evaluation.folders import (
        eval_img_size,
        train_dataset_cfg,
        volume_types,
    )
    from mmssl.evaluation.rank import rank_metrics, singular_values

    folder = args.data or train_folder(cfg)
    if not folder or not osp.isdir(folder):
        where = '--data' if args.data else "the config's training folder"
        raise FileNotFoundError(
            f'--task rank reads a folder of images, {where} {folder!r} is '
            'not one; give --data FOLDER (any images, no labels needed).'
        )
    size, source = eval_img_size(cfg, args.crop)
    loader, total = _loader(cfg, folder, size, args.max_images)
    if not volume_types(train_dataset_cfg(cfg)):
        how = f'{size}px centre crops ({source})'
    else:
        how = f'loaded as the config trains, centre {size}^3 ({source})'
    print(
        f'rank: {len(loader.dataset)} of the {total} image files of '
        f'{folder} (evenly spaced), {how}'
    )
    skipped = {}
    feats = _random_and_trained(cfg, args, loader, skipped)
    measured = feats.get('trained', feats['random init'])
    args.counts = dict(images=int(measured.shape[0]))
    if skipped:
        args.counts['skipped'] = len(skipped)
        print(skipped_line(skipped, folder, int(measured.shape[0])))
    metrics = {f'rank/{k}': v for k, v in rank_metrics(measured).items()}
    if args.checkpoint:
        baseline = rank_metrics(feats['random init'])
        metrics['rank/random_init_rankme'] = baseline['rankme']
        metrics['rank/random_init_spread'] = baseline['spread']
    spectra = {name: singular_values(f) for name, f in feats.items()}
    return metrics, rank_figure(spectra)
