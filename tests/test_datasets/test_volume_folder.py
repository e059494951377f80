"""VolumeFolderDataset: folders, datalists, MONAI preprocessing, caches."""

import json
import os

import numpy as np
import pytest
import torch

from mmssl.datasets import VolumeFolderDataset, volume_cache
from tests.support.volumes import make_volume_folder, ramp, save_nifti

LOAD = [dict(type='LoadVolume')]


@pytest.fixture
def vol_root(tmp_path):
    root = str(tmp_path / 'vols')
    good, bad = make_volume_folder(root)
    return root, good, bad


def _build(root, **kw):
    kw.setdefault('preprocess', LOAD)
    return VolumeFolderDataset(root, **kw)


def test_folder_scan_and_channel_first_values(vol_root):
    root, good, bad = vol_root
    ds = _build(root, max_bad_ratio=1.0)
    assert sorted(ds.get_img_path(i) for i in range(len(ds))) == sorted(
        good + bad
    )  # .nii, .nii.gz, .npy in any case; notes.txt left out
    for i in range(len(ds)):
        path = ds.get_img_path(i)
        if path in good:
            img = ds[i]['img']
            assert img.shape == (1, 16, 16, 16)
            offset = float(good.index(path) == 1) + 2 * (path.endswith('NII'))
            np.testing.assert_array_equal(
                np.asarray(img[0]), ramp(offset=offset)
            )


def test_bad_volumes_skipped_and_named(vol_root):
    root, good, bad = vol_root
    ds = _build(
        root,
        max_bad_ratio=1.0,
        pipeline=[dict(type='PackInputs', input_key='img')],
    )
    skipped = {}
    for i in range(len(ds)):
        out = ds[i]
        assert out['inputs'].shape == (1, 16, 16, 16)
        skipped.update(dict(out['data_samples'].skipped_files))
    assert set(skipped) == set(bad)
    assert 'EOFError' in skipped[[b for b in bad if 'trunc' in b][0]]
    assert 'shape (4, 4)' in skipped[[b for b in bad if 'flat' in b][0]]
    # the 2D policy: too many bad files stop the run, naming them
    strict = _build(root, max_bad_ratio=0.1, min_checked=2)
    with pytest.raises(RuntimeError, match='max_bad_ratio'):
        for i in range(len(strict)):
            strict[i]


def test_json_datalist(tmp_path):
    os.makedirs(tmp_path / 'imgs')
    np.save(tmp_path / 'imgs' / 'x.npy', ramp())
    save_nifti(str(tmp_path / 'imgs' / 'y.nii.gz'), ramp(offset=5.0))
    datalist = dict(
        training=[{'image': 'imgs/x.npy'}, {'image': 'imgs/y.nii.gz'}],
        validation=[{'image': 'imgs/x.npy'}],
    )
    ann = tmp_path / 'dataset.json'
    ann.write_text(json.dumps(datalist))
    ds = VolumeFolderDataset(ann_file=str(ann), preprocess=LOAD)
    assert [ds.get_img_path(i) for i in range(2)] == [
        str(tmp_path / 'imgs' / 'x.npy'),
        str(tmp_path / 'imgs' / 'y.nii.gz'),
    ]
    assert float(ds[1]['img'][0, 0, 0, 0]) == 5.0
    val = VolumeFolderDataset(
        ann_file=str(ann), preprocess=LOAD, datalist_key='validation'
    )
    assert len(val) == 1


def test_monai_orientation_spacing_and_hu_window(tmp_path):
    # LPS-oriented file: x and y axes flipped with respect to RAS
    affine = np.diag([-1.0, -1.0, 2.0, 1.0])
    path = str(tmp_path / 'lps.nii.gz')
    save_nifti(path, ramp((4, 4, 4)) - 100, affine)
    preprocess = LOAD + [
        dict(
            type='MONAITransform',
            transform='Orientationd',
            keys='img',
            axcodes='RAS',
        ),
        dict(
            type='MONAITransform',
            transform='Spacingd',
            keys='img',
            pixdim=(1.0, 1.0, 1.0),
            mode='nearest',
        ),
        dict(
            type='MONAITransform',
            transform='ScaleIntensityRanged',
            keys='img',
            a_min=-100.0,
            a_max=100.0,
            b_min=0.0,
            b_max=1.0,
            clip=True,
        ),
    ]
    ds = VolumeFolderDataset(str(tmp_path), preprocess=preprocess)
    img = np.asarray(ds[0]['img'][0])
    # third axis had 2 mm voxels: resampled to 1 mm (4 -> 7 or 8 voxels)
    assert img.shape[:2] == (4, 4) and img.shape[2] >= 7
    raw = ramp((4, 4, 4))[::-1, ::-1]  # RAS flips x and y back
    want = np.clip(raw[:, :, 0] / 200.0, 0, 1)
    np.testing.assert_allclose(img[:, :, 0], want, atol=1e-6)
    assert img.max() == 1.0  # clipped at a_max


def test_monai_transform_errors():
    from mmssl.datasets.transforms import MONAITransform

    with pytest.raises(ValueError, match='dictionary transform'):
        MONAITransform('Orientation', axcodes='RAS')


def test_memory_cache_shards_and_caps(vol_root, monkeypatch):
    root, good, _ = vol_root
    n_bytes = 16**3 * 4
    ds = _build(root, cache='memory', max_bad_ratio=1.0)
    for i in range(len(ds)):
        ds[i]
    assert len(ds.cache) == 3  # the good ones, one process owns them all
    cached = ds.cache.get(0, None)
    again = ds[0]['img']
    assert again is cached  # served from memory
    # rank 1 of 2 keeps the odd indices only
    monkeypatch.setattr(volume_cache, 'get_dist_info', lambda: (1, 2))
    ds = _build(root, cache='memory', max_bad_ratio=1.0)
    for i in range(len(ds)):
        ds[i]
    assert set(ds.cache._store) <= {1, 3, 5}
    assert ds.cache.nbytes == len(ds.cache) * n_bytes
    # the cap: room for one volume only
    ds = _build(
        root,
        cache='memory',
        cache_max_gb=1.5 * n_bytes / 2**30,
        cache_shard=False,
        max_bad_ratio=1.0,
    )
    for i in range(len(ds)):
        ds[i]
    assert len(ds.cache) == 1


def test_disk_cache_keyed_by_file_and_transform(vol_root, tmp_path):
    root, good, _ = vol_root
    cache_dir = str(tmp_path / 'cache')
    ds = _build(root, cache='disk', cache_dir=cache_dir, max_bad_ratio=1.0)
    for i in range(len(ds)):
        ds[i]
    files = [f for _, _, fs in os.walk(cache_dir) for f in fs]
    assert len(files) == 3 and all(f.endswith('.npy') for f in files)
    # a second dataset (another rank, a later run) reads the cache: the
    # preprocess steps do not run
    again = _build(root, cache='disk', cache_dir=cache_dir)
    i = [again.get_img_path(k) for k in range(len(again))].index(good[0])
    again.preprocess = None  # would raise if called
    np.testing.assert_array_equal(np.asarray(again[i]['img'][0]), ramp())
    # another transform or a changed file: another key
    other = VolumeFolderDataset(
        root,
        cache='disk',
        cache_dir=cache_dir,
        preprocess=LOAD
        + [
            dict(
                type='MONAITransform', transform='ScaleIntensityd', keys='img'
            )
        ],
    )
    key = again.cache.key(good[0])
    assert other.cache.key(good[0]) != key
    np.save(good[0], ramp(offset=3.0))
    os.utime(good[0], ns=(1, 1))
    assert again.cache.key(good[0]) != key
    cache = ds.cache
    assert cache.get(0, good[0]) is None


def test_cache_arguments_checked(vol_root):
    root, _, _ = vol_root
    with pytest.raises(ValueError, match='cache_dir'):
        _build(root, cache='disk')
    with pytest.raises(ValueError, match='preprocess'):
        VolumeFolderDataset(root, cache='memory')
    with pytest.raises(ValueError, match="'memory' or 'disk'"):
        _build(root, cache='ram')


def test_pipeline_output_is_plain_tensors(vol_root):
    root, _, _ = vol_root
    ds = _build(
        root,
        indices=1,
        pipeline=[
            dict(type='MultiCrop3D', global_size=16, local_size=8),
            dict(type='PackInputs', algorithm_keys=['mask']),
        ],
    )
    views = ds[0]['inputs']
    assert len(views) == 6
    assert all(type(v) is torch.Tensor for v in views)


def test_four_d_nifti_is_channel_first(tmp_path):
    save_nifti(
        str(tmp_path / 'two.nii.gz'),
        np.stack([ramp((4, 6, 8)), ramp((4, 6, 8)) + 0.5], axis=-1),
    )
    ds = VolumeFolderDataset(str(tmp_path), preprocess=LOAD)
    img = np.asarray(ds[0]['img'])
    assert img.shape == (2, 4, 6, 8)
    np.testing.assert_array_equal(img[1] - img[0], np.full((4, 6, 8), 0.5))


def test_random_monai_transform_follows_numpy_seed():
    """Reseeded from NumPy's generator (seeded per rank and worker by
    mmengine): the same seed repeats a draw, other seeds vary it."""
    from mmssl.datasets.transforms import MONAITransform

    t = MONAITransform('RandFlipd', keys='img', prob=0.5, spatial_axis=0)
    vol = torch.arange(8.0).reshape(1, 2, 2, 2)
    outcomes = []
    for seed in range(12):
        np.random.seed(seed)
        first = t(dict(img=vol))['img']
        np.random.seed(seed)
        second = t(dict(img=vol))['img']
        assert torch.equal(torch.as_tensor(first), torch.as_tensor(second))
        outcomes.append(torch.equal(torch.as_tensor(first), vol))
    assert any(outcomes) and not all(outcomes)
