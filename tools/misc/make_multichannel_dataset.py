"""Write a small labelled synthetic 5-channel 16-bit TIFF set of 'cells'.

A stand-in for multi-channel fluorescence microscopy, for the
multi-channel demo (configs/multichannel/). Every image holds 4 to 9
round cells on a noisy background with uneven illumination. Channel 0 is
a nuclear stain (a small disc in every cell); channels 1 to 4 are
markers a, b, c, d. Two to four cells carry two markers each, and the
class says which markers go together in one cell:

    ab-cd: cells are a+b or c+d     ac-bd: a+c or b+d     ad-bc: a+d or b+c

Two to five more cells carry one random marker each. Every image has
paired cells of both kinds, so every marker is present in every image
with the same expected amount in every class: no single channel, and no
image-wide channel statistic, tells the classes apart; only which
channels light up together in one cell does. Positions, sizes,
brightness, per-channel gain (as between acquisitions), background and
noise are drawn independently of the class. Nothing is downloaded; every
image has its own seed (``--seed``, split, class, index), so the set is
the same on every machine::

    OUT/train/<class>/<index>.tif   (--train-per-class per class)
    OUT/val/<class>/<index>.tif     (--val-per-class per class)

Files are uint16, 5 channels; even indices are written channel-first
(C, H, W, ImageJ axes ``CYX``), odd ones channel-last (H, W, C, one
page of 5 samples), so both layouts are exercised. Needs tifffile
(``pip install -e ".[multichannel]"``).

Usage:
    python tools/misc/make_multichannel_dataset.py data/multichannel
"""

import os.path as osp
from typing import Tuple

import numpy as np

from mmssl.datasets.labelled_set import parse_args, run, write_labelled_set

CLASSES = ('ab-cd', 'ac-bd', 'ad-bc')
#: marker pairs (channel indices) of the two kinds of cell in each class
PAIRS = {
    'ab-cd': ((1, 2), (3, 4)),
    'ac-bd': ((1, 3), (2, 4)),
    'ad-bc': ((1, 4), (2, 3)),
}
CHANNELS = 5


def _disc(yy, xx, cy, cx, r) -> np.ndarray:
    """A disc of radius ``r`` with a soft 1.5 px edge, values in [0, 1]."""
    d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
    return np.clip((r - d) / 1.5 + 0.5, 0.0, 1.0)


def make_image(name: str, size: int, seed) -> np.ndarray:
    """One (CHANNELS, size, size) uint16 image of class ``name``."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:size, :size].astype(np.float32) + 0.5
    img = np.zeros((CHANNELS, size, size), np.float32)
    n = int(rng.integers(2, 5))
    pairs = PAIRS[name]
    # paired cells (both kinds present), then single-marker distractors
    cells = [
        pairs[k]
        for k in rng.permutation([0, 1] + list(rng.integers(0, 2, n - 2)))
    ]
    cells += [(int(m),) for m in rng.integers(1, 5, rng.integers(2, 6))]
    for markers in rng.permutation(np.array(cells, dtype=object)):
        r = rng.uniform(0.07, 0.14) * size
        cy, cx = rng.uniform(r * 0.5, size - r * 0.5, 2)
        body = _disc(yy, xx, cy, cx, r)
        img[0] += rng.uniform(0.4, 1.0) * _disc(yy, xx, cy, cx, 0.45 * r)
        for ch in markers:
            img[ch] += rng.uniform(0.3, 1.0) * body
    # uneven illumination: a smooth ramp per channel
    ramp = rng.normal(0.0, 0.25, (CHANNELS, 2)) / size
    img += ramp[:, :1, None] * (yy - size / 2) + ramp[:, 1:, None] * (
        xx - size / 2
    )
    gain = rng.uniform(8000.0, 30000.0, CHANNELS)[:, None, None]
    back = rng.uniform(3000.0, 6000.0, CHANNELS)[:, None, None]
    img = back + gain * img
    img += rng.normal(0.0, 1.0, img.shape) * rng.uniform(300.0, 2000.0)
    return np.clip(np.rint(img), 0, 65535).astype(np.uint16)


def write_tiff(path: str, img: np.ndarray, channel_last: bool) -> None:
    """Write (C, H, W) ``img`` channel-first (ImageJ) or channel-last."""
    import tifffile

    if channel_last:
        tifffile.imwrite(
            path,
            np.ascontiguousarray(img.transpose(1, 2, 0)),
            photometric='minisblack',
            planarconfig='contig',
        )
    else:
        tifffile.imwrite(path, img, imagej=True, metadata={'axes': 'CYX'})


def make_dataset(
    out: str,
    size: int = 32,
    train_per_class: int = 200,
    val_per_class: int = 50,
    seed: int = 2026,
) -> Tuple[int, int]:
    """Write the set; returns (number of train, number of val) files."""

    def write(folder, name, i, seeds):
        img = make_image(name, size, seeds)
        path = osp.join(folder, f'{i:04d}.tif')
        write_tiff(path, img, channel_last=bool(i % 2))

    return write_labelled_set(
        out, CLASSES, train_per_class, val_per_class, seed, write
    )


def main(argv=None) -> None:
    args = parse_args(
        __doc__,
        argv,
        'data/multichannel',
        200,
        50,
        min_size=16,
        what='image side',
    )
    side, classes = args.size, f'{len(CLASSES)} classes: {", ".join(CLASSES)}'
    what = f'{CHANNELS}-channel 16-bit TIFFs of {side}x{side} ({classes})'
    run(args, make_dataset, what)


if __name__ == '__main__':
    main()
