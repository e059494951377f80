"""Write the bundled demo dataset: scikit-learn's handwritten digits.

The 1,797 8x8 scans that ship inside scikit-learn (no download) are
upscaled to 32x32 grayscale PNG files and split, with a fixed seed and
stratified by class, into::

    OUT/train/<digit>/<index>.png   (80 %)
    OUT/val/<digit>/<index>.png     (20 %)

Usage:
    python tools/misc/make_demo_dataset.py data/demo
"""

import argparse
import os
import os.path as osp

import cv2
import numpy as np
from sklearn.datasets import load_digits

VAL_SHARE = 0.2
SEED = 0


def split_indices(
    labels: np.ndarray, val_share: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Stratified, seeded split of ``range(len(labels))``."""
    rng = np.random.default_rng(seed)
    train, val = [], []
    for cls in np.unique(labels):
        idx = np.flatnonzero(labels == cls)
        rng.shuffle(idx)
        n_val = int(round(len(idx) * val_share))
        val.extend(idx[:n_val].tolist())
        train.extend(idx[n_val:].tolist())
    return np.sort(train), np.sort(val)


def make_demo_dataset(out_dir: str, size: int = 32) -> dict:
    """Write the demo dataset and return the number of files per split."""
    digits = load_digits()
    images = digits.images  # (1797, 8, 8), values 0..16
    labels = digits.target
    train_idx, val_idx = split_indices(labels, VAL_SHARE, SEED)
    counts = {}
    for split, indices in (('train', train_idx), ('val', val_idx)):
        for i in indices:
            img = (images[i] / 16.0 * 255.0).astype(np.float32)
            img = cv2.resize(img, (size, size), interpolation=cv2.INTER_CUBIC)
            img = np.clip(img, 0, 255).astype(np.uint8)
            folder = osp.join(out_dir, split, str(labels[i]))
            os.makedirs(folder, exist_ok=True)
            cv2.imwrite(osp.join(folder, f'{i:04d}.png'), img)
        counts[split] = len(indices)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        'out_dir',
        nargs='?',
        default='data/demo',
        help='output folder (default: data/demo)',
    )
    parser.add_argument(
        '--size',
        type=int,
        default=32,
        help='side of the written images in pixels',
    )
    args = parser.parse_args()
    counts = make_demo_dataset(args.out_dir, args.size)
    print(
        f'Wrote {counts["train"]} train and {counts["val"]} val images '
        f'of {args.size}x{args.size} px to {args.out_dir}'
    )


if __name__ == '__main__':
    main()
