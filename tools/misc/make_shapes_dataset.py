"""Write the second bundled benchmark: procedurally rendered shapes.

Ten shape classes (circle, square, triangle, pentagon, hexagon, star,
cross, ring, crescent, arrow) are drawn with a random pose (position,
rotation, scale), a random colour, a random lighting gradient and random
background clutter (a two-colour gradient, thin lines and dots). Colour,
position and lighting are drawn independently of the class, so the raw
pixels say little about it: nearest neighbours on raw pixels stay far below
what features that know about shape reach (``--report`` prints the
raw-pixel kNN top-1). Nothing is downloaded. Every image has its own seed
(``SEED``, index), so the set is identical on every machine and run::

    OUT/train/<class>/<index>.png   (TRAIN_PER_CLASS per class)
    OUT/val/<class>/<index>.png     (VAL_PER_CLASS per class)

Usage:
    python tools/misc/make_shapes_dataset.py data/shapes [--report]
"""

import argparse
import functools
import multiprocessing
import os
import os.path as osp
import time
from typing import Dict, List, Tuple

import cv2
import numpy as np

CLASSES = (
    'circle',
    'square',
    'triangle',
    'pentagon',
    'hexagon',
    'star',
    'cross',
    'ring',
    'crescent',
    'arrow',
)
TRAIN_PER_CLASS = 300
VAL_PER_CLASS = 100
SEED = 2026
SUPERSAMPLE = 4  # drawn at 4x the size, then downscaled: smooth edges


def _polygon(n: int, star: bool = False) -> np.ndarray:
    """Unit-radius regular polygon (or star) vertices, shape (k, 2)."""
    k = 2 * n if star else n
    angles = np.arange(k) * 2 * np.pi / k - np.pi / 2
    radii = np.where(np.arange(k) % 2 == 1, 0.45, 1.0) if star else 1.0
    return np.stack([np.cos(angles), np.sin(angles)], 1) * np.reshape(
        radii, (-1, 1)
    )


_CROSS = np.array(
    [
        [-0.3, -1],
        [0.3, -1],
        [0.3, -0.3],
        [1, -0.3],
        [1, 0.3],
        [0.3, 0.3],
        [0.3, 1],
        [-0.3, 1],
        [-0.3, 0.3],
        [-1, 0.3],
        [-1, -0.3],
        [-0.3, -0.3],
    ]
)
_ARROW = np.array(
    [
        [-1, -0.25],
        [0.2, -0.25],
        [0.2, -0.7],
        [1, 0],
        [0.2, 0.7],
        [0.2, 0.25],
        [-1, 0.25],
    ]
)
_SHAPES = {
    'triangle': _polygon(3),
    'square': _polygon(4),
    'pentagon': _polygon(5),
    'hexagon': _polygon(6),
    'star': _polygon(5, star=True),
    'cross': _CROSS,
    'arrow': _ARROW,
}


def _random_colour(rng: np.random.Generator) -> Tuple[int, int, int]:
    hsv = np.array(
        [
            [
                [
                    rng.integers(0, 180),
                    rng.integers(90, 256),
                    rng.integers(90, 256),
                ]
            ]
        ],
        dtype=np.uint8,
    )
    return tuple(int(c) for c in cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)[0, 0])


@functools.lru_cache(maxsize=4)
def _grid(side: int) -> Tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) / (side - 1)
    return yy, xx


def _ramp(side: int, angle: float) -> np.ndarray:
    """Linear ramp from 0 to 1 across the image in direction ``angle``."""
    yy, xx = _grid(side)
    along = np.cos(angle) * (xx - 0.5) + np.sin(angle) * (yy - 0.5)
    return 0.5 + along / np.sqrt(2.0)  # within [0, 1] for every angle


def _background(rng: np.random.Generator, side: int) -> np.ndarray:
    """Two-colour linear gradient with thin lines and dots."""
    c0 = np.array(_random_colour(rng), np.float32) * rng.uniform(0.3, 0.8)
    c1 = np.array(_random_colour(rng), np.float32) * rng.uniform(0.3, 0.8)
    t = _ramp(side, rng.uniform(0, 2 * np.pi))[..., None]
    img = np.ascontiguousarray((c0 * (1 - t) + c1 * t).astype(np.uint8))
    for _ in range(int(rng.integers(2, 6))):
        p0 = tuple(int(v) for v in rng.integers(0, side, 2))
        p1 = tuple(int(v) for v in rng.integers(0, side, 2))
        cv2.line(img, p0, p1, _random_colour(rng), 1, cv2.LINE_AA)
    for _ in range(int(rng.integers(3, 10))):
        centre = tuple(int(v) for v in rng.integers(0, side, 2))
        radius = int(rng.integers(1, 3))
        cv2.circle(img, centre, radius, _random_colour(rng), -1, cv2.LINE_AA)
    return img


def _shape_mask(name: str, side: int, rng: np.random.Generator) -> np.ndarray:
    """Coverage (0..1, float32) of one shape with a random pose, drawn at
    ``SUPERSAMPLE`` times ``side`` and area-averaged down: smooth edges."""
    big = side * SUPERSAMPLE
    radius = rng.uniform(0.22, 0.38) * big
    centre = rng.uniform(radius, big - radius, 2)
    angle = rng.uniform(0, 2 * np.pi)
    mask = np.zeros((big, big), np.uint8)
    c = tuple(int(v) for v in centre)
    if name in ('circle', 'ring', 'crescent'):
        cv2.circle(mask, c, int(radius), 255, -1)
    if name == 'ring':
        cv2.circle(mask, c, int(radius * 0.55), 0, -1)
    elif name == 'crescent':
        shift = radius * 0.5 * np.array([np.cos(angle), np.sin(angle)])
        cut = tuple(int(v) for v in centre + shift)
        cv2.circle(mask, cut, int(radius * 0.85), 0, -1)
    elif name not in ('circle',):
        rot = np.array(
            [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]
        )
        aspect = np.array([1.0, rng.uniform(0.75, 1.0)])
        poly = (_SHAPES[name] * aspect) @ rot.T * radius + centre
        cv2.fillPoly(mask, [np.round(poly).astype(np.int32)], 255)
    small = cv2.resize(mask, (side, side), interpolation=cv2.INTER_AREA)
    return small.astype(np.float32) / 255.0


def render(index: int, label: int, size: int = 64) -> np.ndarray:
    """Render image ``index`` of class ``label`` (BGR uint8, size x size)."""
    rng = np.random.default_rng([SEED, index])
    img = _background(rng, size).astype(np.float32)
    alpha = _shape_mask(CLASSES[label], size, rng)[..., None]
    # Lighting: a linear shading ramp across the object.
    colour = np.array(_random_colour(rng), np.float32)
    shade = 0.65 + 0.35 * _ramp(size, rng.uniform(0, 2 * np.pi))
    img = img * (1 - alpha) + colour * shade[..., None] * alpha
    img += rng.normal(0, 4.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def _plan(
    train_per_class: int, val_per_class: int
) -> List[Tuple[str, int, int]]:
    """(split, label, index) for every image; indices never repeat."""
    plan, index = [], 0
    for split, per_class in (
        ('train', train_per_class),
        ('val', val_per_class),
    ):
        for label in range(len(CLASSES)):
            for _ in range(per_class):
                plan.append((split, label, index))
                index += 1
    return plan


def _write_one(job: Tuple[str, str, int, int, int]) -> str:
    out_dir, split, label, index, size = job
    path = osp.join(out_dir, split, CLASSES[label], f'{index:05d}.png')
    img = render(index, label, size)
    cv2.imwrite(path, img, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    return split


def make_shapes_dataset(
    out_dir: str,
    size: int = 64,
    train_per_class: int = TRAIN_PER_CLASS,
    val_per_class: int = VAL_PER_CLASS,
    workers: int = 1,
) -> Dict[str, int]:
    """Write the shapes dataset; return the number of files per split.

    The files do not depend on ``workers``: every image has its own seed.
    """
    plan = _plan(train_per_class, val_per_class)
    for split in ('train', 'val'):
        for name in CLASSES:
            os.makedirs(osp.join(out_dir, split, name), exist_ok=True)
    jobs = [(out_dir, split, label, i, size) for split, label, i in plan]
    counts = {'train': 0, 'val': 0}
    if workers > 1:
        with multiprocessing.get_context('spawn').Pool(workers) as pool:
            done = pool.imap_unordered(_write_one, jobs, chunksize=64)
            for split in done:
                counts[split] += 1
    else:
        for job in jobs:
            counts[_write_one(job)] += 1
    return counts


def raw_pixel_knn(out_dir: str, k: int = 20, thumb: int = 16) -> float:
    """kNN top-1 (%) on raw pixels: the floor that learning must beat.

    Images are shrunk to ``thumb`` x ``thumb``, flattened and centred;
    the kNN is the one of every evaluation
    (:func:`mmssl.evaluation.weighted_knn_scores`, temperature 0.07): the
    ``k`` most cosine-similar train images vote for their class.
    """
    import torch

    from mmssl.evaluation import topk_accuracy, weighted_knn_scores

    def load(split: str) -> Tuple[np.ndarray, np.ndarray]:
        feats, labels = [], []
        for label, name in enumerate(CLASSES):
            folder = osp.join(out_dir, split, name)
            for fname in sorted(os.listdir(folder)):
                img = cv2.imread(osp.join(folder, fname), cv2.IMREAD_COLOR)
                img = cv2.resize(img, (thumb, thumb), cv2.INTER_AREA)
                feats.append(img.astype(np.float32).ravel())
                labels.append(label)
        return np.stack(feats), np.array(labels)

    xtr, ytr = load('train')
    xva, yva = load('val')
    mean = xtr.mean(0)
    scores = weighted_knn_scores(
        torch.from_numpy(xva - mean),
        torch.from_numpy(xtr - mean),
        torch.from_numpy(ytr),
        len(CLASSES),
        k=k,
    )
    return topk_accuracy(scores, torch.from_numpy(yva), (1,))['top1']


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        'out_dir', nargs='?', default='data/shapes', help='output folder'
    )
    parser.add_argument('--size', type=int, default=64, help='image side (px)')
    parser.add_argument('--train-per-class', type=int, default=TRAIN_PER_CLASS)
    parser.add_argument('--val-per-class', type=int, default=VAL_PER_CLASS)
    parser.add_argument(
        '--workers',
        type=int,
        default=min(2, os.cpu_count() or 1),
        help='processes that render (default: 2, or 1 on one core)',
    )
    parser.add_argument(
        '--report',
        action='store_true',
        help='print the raw-pixel kNN top-1 (the floor to beat)',
    )
    args = parser.parse_args()
    start = time.perf_counter()
    counts = make_shapes_dataset(
        args.out_dir,
        args.size,
        args.train_per_class,
        args.val_per_class,
        args.workers,
    )
    print(
        f'Wrote {counts["train"]} train and {counts["val"]} val images of '
        f'{args.size}x{args.size} px in {len(CLASSES)} classes to '
        f'{args.out_dir} ({time.perf_counter() - start:.1f} s)'
    )
    if args.report:
        print(f'raw-pixel kNN top-1 (k=20): {raw_pixel_knn(args.out_dir):.2f}')


if __name__ == '__main__':
    main()
