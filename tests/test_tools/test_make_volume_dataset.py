"""tools/misc/make_volume_dataset.py: the synthetic labelled volumes."""

import os
import os.path as osp

import numpy as np
import pytest

from tests.support.tools import load_tool

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
vols = load_tool('misc/make_volume_dataset.py')


def test_layout_counts_shapes_and_determinism(tmp_path):
    counts = vols.make_dataset(
        str(tmp_path / 'a'), size=16, train_per_class=2, val_per_class=1
    )
    assert counts == (8, 4)
    for split, n in (('train', 2), ('val', 1)):
        assert sorted(os.listdir(tmp_path / 'a' / split)) == sorted(
            vols.CLASSES
        )
        for name in vols.CLASSES:
            files = sorted(os.listdir(tmp_path / 'a' / split / name))
            assert files == [f'{i:04d}.npy' for i in range(n)]
            vol = np.load(tmp_path / 'a' / split / name / files[0])
            assert vol.shape == (16, 16, 16) and vol.dtype == np.float32
    vols.make_dataset(
        str(tmp_path / 'b'), size=16, train_per_class=2, val_per_class=1
    )
    for split in ('train', 'val'):
        f = osp.join(split, 'torus', '0000.npy')
        a, b = np.load(tmp_path / 'a' / f), np.load(tmp_path / 'b' / f)
        assert np.array_equal(a, b)
    # train and val volumes differ (their own seeds)
    t = np.load(tmp_path / 'a/train/cube/0000.npy')
    v = np.load(tmp_path / 'a/val/cube/0000.npy')
    assert not np.array_equal(t, v)


@pytest.mark.parametrize('shape', vols.CLASSES)
def test_object_is_a_bright_solid_of_the_right_size(shape):
    vol = vols.make_volume(shape, 32, np.random.SeedSequence(7))
    lo, hi = np.percentile(vol, [5, 99.5])
    assert hi - lo > 0.25  # the object stands out of the background
    inside = vol > (lo + hi) / 2
    share = inside.mean()
    # radius 0.2-0.3 of the side: a few percent of the volume
    assert 0.003 < share < 0.15, share


def test_shapes_differ_in_geometry():
    """Same seed (same pose, size, intensity): the occupancies differ;
    the torus has a hole at its centre, the sphere does not."""
    p = np.zeros((3, 1, 1, 1))
    assert vols._inside('sphere', p, 8.0).item() == 1.0
    assert vols._inside('torus', p, 8.0).item() == 0.0
    q = np.array([6.0, 6.0, 6.0]).reshape(3, 1, 1, 1)  # cube corner region
    assert vols._inside('cube', q, 8.0).item() == 1.0
    assert vols._inside('sphere', q, 8.0).item() == 0.0


def test_cli_writes_and_reports(tmp_path, capsys):
    vols.main(
        [
            str(tmp_path),
            '--size',
            '8',
            '--train-per-class',
            '1',
            '--val-per-class',
            '1',
        ]
    )
    assert 'wrote 4 train and 4 val volumes of 8^3' in capsys.readouterr().out
    with pytest.raises(SystemExit, match='--size'):
        vols.main([str(tmp_path), '--size', '4'])
