"""tools/misc/make_shapes_dataset.py: the second bundled benchmark."""

import hashlib
import math
import os
import os.path as osp
import subprocess
import sys

import cv2
import numpy as np
import pytest

from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
TOOL = osp.join(ROOT, 'tools/misc/make_shapes_dataset.py')
shapes = load_tool('misc/make_shapes_dataset.py')


def _digest(folder: str) -> dict:
    out = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            path = osp.join(dirpath, name)
            with open(path, 'rb') as f:
                out[osp.relpath(path, folder)] = hashlib.sha1(
                    f.read()
                ).hexdigest()
    return out


def test_layout_counts_and_sizes(tmp_path):
    counts = shapes.make_shapes_dataset(
        str(tmp_path), size=48, train_per_class=3, val_per_class=1
    )
    assert counts == {'train': 30, 'val': 10}
    for split, per_class in (('train', 3), ('val', 1)):
        assert sorted(os.listdir(tmp_path / split)) == sorted(shapes.CLASSES)
        for name in shapes.CLASSES:
            files = os.listdir(tmp_path / split / name)
            assert len(files) == per_class
            img = cv2.imread(str(tmp_path / split / name / files[0]))
            assert img.shape == (48, 48, 3)


def _cli(*args: str, workers: int = 2) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, TOOL, *args, '--workers', str(workers)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, OMP_NUM_THREADS='1'),
    )
    assert out.returncode == 0, out.stderr
    return out


def test_same_bytes_on_every_run_and_worker_count(tmp_path):
    a, b = str(tmp_path / 'a'), str(tmp_path / 'b')
    shapes.make_shapes_dataset(a, 32, train_per_class=2, val_per_class=1)
    # two spawned workers: run as a script, so they can import its module
    _cli(b, '--size', '32', '--train-per-class', '2', '--val-per-class', '1')
    da, db = _digest(a), _digest(b)
    assert len(da) == 30 and da == db
    # different images differ (the seed is per image, not per class)
    assert len(set(da.values())) == 30


@pytest.mark.parametrize('angle', np.linspace(0, 2 * np.pi, 13))
def test_gradient_ramp_stays_in_unit_range(angle):
    # A ramp beyond [0, 1] wrapped around in uint8: bright corner wedges.
    ramp = shapes._ramp(64, float(angle))
    assert ramp.min() >= 0.0 and ramp.max() <= 1.0
    assert ramp.max() - ramp.min() > 0.7  # and it is a real gradient


def _replay_pose(seed: int, side: int):
    rng = np.random.default_rng(seed)
    big = side * shapes.SUPERSAMPLE
    radius = rng.uniform(0.22, 0.38) * big
    rng.uniform(radius, big - radius, 2)  # centre
    rng.uniform(0, 2 * np.pi)  # angle
    aspect = rng.uniform(0.75, 1.0)
    return radius / shapes.SUPERSAMPLE, aspect


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_shape_areas_match_geometry(seed):
    side = 64
    radius, aspect = _replay_pose(seed, side)
    circle = shapes._shape_mask('circle', side, np.random.default_rng(seed))
    assert circle.sum() == pytest.approx(math.pi * radius**2, rel=0.04)
    # A square with circumradius r has area 2 r^2; the aspect squeezes one
    # axis before the rotation.
    square = shapes._shape_mask('square', side, np.random.default_rng(seed))
    assert square.sum() == pytest.approx(2 * radius**2 * aspect, rel=0.05)
    ring = shapes._shape_mask('ring', side, np.random.default_rng(seed))
    want = math.pi * radius**2 * (1 - 0.55**2)
    assert ring.sum() == pytest.approx(want, rel=0.06)


def test_raw_pixels_do_not_give_the_class_away(tmp_path):
    # The point of this set: nearest neighbours on raw pixels stay near
    # chance (10 %); 3000/1000 images give 15.80 %.
    shapes.make_shapes_dataset(
        str(tmp_path), 32, train_per_class=30, val_per_class=10
    )
    top1 = shapes.raw_pixel_knn(str(tmp_path), k=10)
    assert 0.0 <= top1 < 35.0


def test_cli_reports_counts_and_the_floor(tmp_path):
    out = _cli(
        str(tmp_path),
        '--size',
        '32',
        '--train-per-class',
        '2',
        '--val-per-class',
        '1',
        '--report',
        workers=1,
    )
    assert 'Wrote 20 train and 10 val images of 32x32 px in 10 classes' in (
        out.stdout
    )
    assert 'raw-pixel kNN top-1 (k=20):' in out.stdout
