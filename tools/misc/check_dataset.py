"""Decode every image of a dataset and list the bad files with reasons.

    python tools/misc/check_dataset.py CONFIG_OR_FOLDER [--out bad.txt]
        [--workers N] [--cfg-options k=v ...]

CONFIG_OR_FOLDER is a config (its ``train_dataloader.dataset`` is
checked; mixed datasets are walked through) or a folder (scanned like
``ImageFolderDataset``). Each file is decoded with ``LoadImageRobust``
(with the config's loading options when it uses that transform), or
with the config's ``LoadMultiChannelTiff`` (channel count, layout) for
multi-channel TIFF configs. Exit status is 1 when bad files were found.
"""

import argparse
import os.path as osp
import sys
from multiprocessing import Pool

from tqdm import tqdm

_LOADER = None
#: Loading transforms whose options a config passes on to the check.
_LOADERS = ('LoadImageRobust', 'LoadMultiChannelTiff')


def dataset_paths(dataset) -> list:
    """Every image path of a built dataset (mixed datasets included)."""
    if hasattr(dataset, 'datasets'):
        return [p for d in dataset.datasets for p in dataset_paths(d)]
    if hasattr(dataset, 'get_img_path'):
        return [dataset.get_img_path(i) for i in range(len(dataset))]
    if hasattr(dataset, 'full_init'):
        dataset.full_init()
    return [dataset.get_data_info(i)['img_path'] for i in range(len(dataset))]


def _loader_cfg(dataset_cfg) -> dict:
    """The config's loading transform (see ``_LOADERS``), if any."""
    stack = [dataset_cfg]
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            for t in d.get('pipeline', []) or []:
                if isinstance(t, dict) and t.get('type') in _LOADERS:
                    return dict(t)
            stack.extend(d.get('datasets', []) or [])
    return dict(type='LoadImageRobust')


def _init(loader_cfg):
    global _LOADER
    from mmssl.datasets import transforms

    cfg = dict(loader_cfg)
    kind = cfg.pop('type', 'LoadImageRobust')
    _LOADER = getattr(transforms, kind)(**cfg)


def _check(path):
    from mmssl.datasets.transforms import BadImageError

    try:
        _LOADER(dict(img_path=path))
        return path, None
    except BadImageError as e:
        return path, e.reason
    except Exception as e:  # noqa: BLE001 - report anything
        return path, f'{type(e).__name__}: {e}'


def collect(target: str, cfg_options=None, allow_new_keys=False):
    """(paths, loader config) for a config file or a folder."""
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    from mmssl.registry import DATASETS

    if osp.isdir(target):
        ds_cfg = dict(type='ImageFolderDataset', data_root=target)
    else:
        from mmssl.config import load_config

        cfg = load_config(
            target, cfg_options, allow_new_keys, exit_on_error=True
        )
        ds_cfg = cfg.train_dataloader.dataset.to_dict()
    loader = _loader_cfg(ds_cfg)
    return dataset_paths(DATASETS.build(ds_cfg)), loader


def check(paths, loader_cfg, workers=1):
    """List of (path, reason) for bad files, with a progress bar."""
    bad = []
    bar = dict(total=len(paths), desc='checking', unit='img')
    if workers <= 1:
        _init(loader_cfg)
        results = map(_check, paths)
        for path, reason in tqdm(results, **bar):
            if reason:
                bad.append((path, reason))
    else:
        with Pool(workers, initializer=_init, initargs=(loader_cfg,)) as p:
            for path, reason in tqdm(
                p.imap(_check, paths, chunksize=16), **bar
            ):
                if reason:
                    bad.append((path, reason))
    return bad


def main(argv=None):
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('target', help='config file or image folder')
    parser.add_argument(
        '--out',
        default='bad_files.txt',
        help='where to write "path<TAB>reason" lines',
    )
    parser.add_argument('--workers', type=int, default=1)
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    paths, loader = collect(args.target, args.cfg_options, args.allow_new_keys)
    bad = check(paths, loader, args.workers)
    with open(args.out, 'w', encoding='utf-8') as f:
        for path, reason in bad:
            f.write(f'{path}\t{reason}\n')
    print(
        f'{len(paths)} files checked, {len(bad)} bad '
        f'({len(bad) / max(len(paths), 1):.2%}); list in {args.out}'
    )
    for path, reason in bad[:10]:
        print(f'  {path}: {reason}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
