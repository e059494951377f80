"""Write a small labelled synthetic 3D set for the volumetric demos.

Four classes of one solid object each (sphere, cube, ellipsoid, torus) in
a cubic volume, with a random pose (centre, 3D rotation), a random size,
a random intensity on a random background level, a smooth random
intensity gradient and Gaussian noise. Pose, size and intensities are
drawn independently of the class, so the class is the shape. Nothing is
downloaded; every volume has its own seed (``--seed``, split, index), so
the set is the same on every machine::

    OUT/train/<class>/<index>.npy   (--train-per-class per class)
    OUT/val/<class>/<index>.npy     (--val-per-class per class)

Each file is a float32 (D, H, W) array in about [0, 1], which
``LoadVolume`` reads as one channel.

Usage:
    python tools/misc/make_volume_dataset.py data/volumes [--size 32]
"""

import os.path as osp
from typing import Tuple

import numpy as np

from mmssl.datasets.labelled_set import parse_args, run, write_labelled_set

CLASSES = ('sphere', 'cube', 'ellipsoid', 'torus')


def _rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random 3D rotation matrix (QR of a Gaussian matrix)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _inside(shape: str, p: np.ndarray, r: float) -> np.ndarray:
    """Soft occupancy in [0, 1] of ``shape`` of radius ``r`` at points
    ``p`` (3, D, H, W) given in the object's frame (voxels)."""
    x, y, z = p
    if shape == 'sphere':
        dist = np.sqrt(x**2 + y**2 + z**2) - r
    elif shape == 'cube':
        side = r * 0.85  # same order of volume as the sphere
        dist = np.maximum(np.maximum(abs(x), abs(y)), abs(z)) - side
    elif shape == 'ellipsoid':
        a, b, c = r * 1.5, r * 0.75, r * 0.55
        dist = (np.sqrt((x / a) ** 2 + (y / b) ** 2 + (z / c) ** 2) - 1) * c
    elif shape == 'torus':
        major, minor = r * 0.75, r * 0.38
        dist = np.sqrt((np.sqrt(x**2 + y**2) - major) ** 2 + z**2) - minor
    else:
        raise ValueError(f'unknown shape {shape!r}')
    return np.clip(0.5 - dist, 0.0, 1.0)  # ~1 voxel soft edge


def make_volume(shape: str, size: int, seed: int) -> np.ndarray:
    """One (size, size, size) float32 volume holding ``shape``."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.2, 0.3) * size
    centre = rng.uniform(0.4, 0.6, size=3) * size
    grid = np.indices((size,) * 3, dtype=np.float32) + 0.5
    # (3, D, H, W) points in the object's frame
    p = np.tensordot(_rotation(rng).T, grid - centre[:, None, None, None], 1)
    occ = _inside(shape, p, r)
    back = rng.uniform(0.0, 0.3)
    fore = back + rng.uniform(0.3, 0.7)
    slope = rng.normal(size=3) * 0.15 / size  # smooth intensity gradient
    ramp = np.tensordot(slope, grid - size / 2, 1)
    vol = back + (fore - back) * occ + ramp
    vol += rng.normal(0.0, rng.uniform(0.02, 0.08), vol.shape)
    return vol.astype(np.float32)


def make_dataset(
    out: str,
    size: int = 32,
    train_per_class: int = 50,
    val_per_class: int = 25,
    seed: int = 2026,
) -> Tuple[int, int]:
    """Write the set; returns (number of train, number of val) files."""

    def write(folder, name, i, seeds):
        vol = make_volume(name, size, seeds)
        np.save(osp.join(folder, f'{i:04d}.npy'), vol)

    return write_labelled_set(
        out, CLASSES, train_per_class, val_per_class, seed, write
    )


def main(argv=None) -> None:
    args = parse_args(
        __doc__, argv, 'data/volumes', 50, 25, min_size=8, what='volume side'
    )
    classes = f'{len(CLASSES)} classes: {", ".join(CLASSES)}'
    run(args, make_dataset, f'volumes of {args.size}^3 ({classes})')


if __name__ == '__main__':
    main()
