"""Per-channel mean and std of a folder of multi-channel TIFFs.

Reads every ``.tif``/``.tiff`` file below the folder (recursively) with
``LoadMultiChannelTiff`` and the same ``--channels``, ``--layout`` and
``--scale`` as the training pipeline, skips bad files (naming them), and
prints the ``mean`` and ``std`` lists to paste into
``MultiChannelDataPreprocessor``::

    python tools/misc/channel_stats.py data/multichannel/train --channels 5
    python tools/misc/channel_stats.py /data/cells --channels 4 \\
        --scale 0 4095 --max-files 2000

Needs tifffile (``pip install -e ".[multichannel]"``).
"""

import argparse
import os.path as osp
import sys

import numpy as np

from mmssl.datasets.image_index import scan_images
from mmssl.datasets.transforms import LoadMultiChannelTiff
from mmssl.datasets.transforms.loading import BadImageError


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('folder', help='folder of TIFFs (recursive)')
    parser.add_argument('--channels', type=int, default=None)
    parser.add_argument(
        '--layout', default='auto', choices=('auto', 'CHW', 'HWC')
    )
    parser.add_argument(
        '--scale',
        nargs='+',
        default=['percentile'],
        help="'percentile' (default), 'none', or LO HI (a fixed range)",
    )
    parser.add_argument(
        '--percentiles', type=float, nargs=2, default=(1.0, 99.8)
    )
    parser.add_argument(
        '--max-files',
        type=int,
        default=None,
        help='read at most this many files, evenly spread',
    )
    return parser.parse_args(argv)


def channel_stats(paths, loader: LoadMultiChannelTiff):
    """(mean, std, number read, bad [(path, reason)]) over ``paths``."""
    total = total_sq = None
    count, bad = 0, []
    for path in paths:
        try:
            img = loader(dict(img_path=path))['img']
        except BadImageError as e:
            bad.append((path, e.reason))
            continue
        flat = img.reshape(-1, img.shape[2]).astype(np.float64)
        if total is None:
            total = np.zeros(flat.shape[1])
            total_sq = np.zeros(flat.shape[1])
        if flat.shape[1] != len(total):
            bad.append((path, f'{flat.shape[1]} channels'))
            continue
        total += flat.sum(0)
        total_sq += (flat**2).sum(0)
        count += len(flat)
    if not count:
        raise SystemExit('error: no readable image')
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 0.0))
    return mean, std, count, bad


def main(argv=None) -> None:
    args = parse_args(argv)
    scale = args.scale[0] if len(args.scale) == 1 else args.scale
    if not isinstance(scale, str):
        scale = tuple(float(x) for x in scale)
    loader = LoadMultiChannelTiff(
        channels=args.channels,
        layout=args.layout,
        scale=scale,
        percentiles=tuple(args.percentiles),
    )
    rels = scan_images(args.folder, ('.tif', '.tiff'))
    if args.max_files and len(rels) > args.max_files:
        pick = np.linspace(0, len(rels) - 1, args.max_files).astype(int)
        rels = [rels[i] for i in pick]
    paths = [osp.join(args.folder, r) for r in rels]
    mean, std, _, bad = channel_stats(paths, loader)
    for path, reason in bad:
        print(f'skipped {path}: {reason}', file=sys.stderr)
    print(f'{len(paths) - len(bad)} files, {len(mean)} channels')
    print(f'mean={[round(float(m), 4) for m in mean]},')
    print(f'std={[round(float(s), 4) for s in std]},')


if __name__ == '__main__':
    main()
