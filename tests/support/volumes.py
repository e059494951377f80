"""Tiny synthetic volume files for the 3D dataset tests."""

import gzip
import os
import os.path as osp

import nibabel as nib
import numpy as np


def ramp(shape=(16, 16, 16), offset=0.0):
    """float32 volume whose value encodes the voxel: 256 z + 16 y + x."""
    z, y, x = np.indices(shape, dtype=np.float32)
    return 256 * z + 16 * y + x + offset


def save_nifti(path, data, affine=None):
    img = nib.Nifti1Image(data, np.eye(4) if affine is None else affine)
    nib.save(img, path)


def make_volume_folder(root):
    """Good volumes (nested), and bad ones; returns (good, bad) paths."""
    os.makedirs(osp.join(root, 'ct', 'sub'), exist_ok=True)
    good = [
        osp.join(root, 'a.npy'),
        osp.join(root, 'ct', 'b.nii.gz'),
        osp.join(root, 'ct', 'sub', 'c.NII'),
    ]
    np.save(good[0], ramp())
    save_nifti(good[1], ramp(offset=1.0))
    save_nifti(good[2], ramp(offset=2.0))
    bad = [
        osp.join(root, 'ct', 'truncated.nii.gz'),
        osp.join(root, 'empty.nii'),
        osp.join(root, 'flat.npy'),
    ]
    save_nifti(bad[0], ramp())
    with open(bad[0], 'rb') as f:
        data = f.read()
    with open(bad[0], 'wb') as f:
        f.write(data[: len(data) // 2])
    open(bad[1], 'wb').close()
    np.save(bad[2], np.zeros((4, 4), np.float32))
    with open(osp.join(root, 'notes.txt'), 'w') as f:
        f.write('not a volume')
    assert gzip  # noqa: B018 - .nii.gz files are gzip streams
    return sorted(good), sorted(bad)
