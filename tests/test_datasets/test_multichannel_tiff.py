"""LoadMultiChannelTiff: 16-bit values kept or scaled as documented, both
layouts, bad files skipped and named by ImageFolderDataset."""

import os.path as osp
import pickle
import sys

import numpy as np
import pytest

from mmssl.datasets import ImageFolderDataset
from mmssl.datasets.transforms import BadImageError, LoadMultiChannelTiff
from tests.support.tools import load_tool

tifffile = pytest.importorskip('tifffile')

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _image(c=5, h=6, w=7) -> np.ndarray:
    """(C, H, W) uint16 with distinct values spanning the 16-bit range."""
    x = np.arange(c * h * w, dtype=np.float64).reshape(c, h, w)
    return np.round(x * 65535 / x.max()).astype(np.uint16)


def _write(path, arr, **kwargs) -> str:
    tifffile.imwrite(str(path), arr, **kwargs)
    return str(path)


@pytest.mark.parametrize(
    'layout_name, to_file, kwargs',
    [
        (
            'chw-imagej',
            lambda a: a,
            dict(imagej=True, metadata={'axes': 'CYX'}),
        ),
        ('chw-plain', lambda a: a, dict()),
        (
            'hwc-samples',
            lambda a: a.transpose(1, 2, 0).copy(),
            dict(photometric='minisblack', planarconfig='contig'),
        ),
        ('hwc-plain', lambda a: a.transpose(1, 2, 0).copy(), dict()),
        ('tzcyx', lambda a: a[None, None], dict(imagej=True)),
    ],
)
def test_uint16_values_kept_in_both_layouts(
    tmp_path, layout_name, to_file, kwargs
):
    a = _image()
    path = _write(tmp_path / f'{layout_name}.tif', to_file(a), **kwargs)
    out = LoadMultiChannelTiff(channels=5, scale='none')(dict(img_path=path))
    img = out['img']
    assert img.dtype == np.float32 and img.shape == (6, 7, 5)
    assert out['img_shape'] == (6, 7) and out['ori_shape'] == (6, 7)
    # exact: every uint16 value is a float32
    np.testing.assert_array_equal(img, a.transpose(1, 2, 0))
    assert img.max() == 65535


def test_explicit_layout_and_ambiguous_shape(tmp_path):
    a = _image(c=5, h=5, w=5)  # (5, 5, 5): either end could be channels
    path = _write(tmp_path / 'cube.tif', a)
    with pytest.raises(ValueError, match="layout='CHW' or layout='HWC'"):
        LoadMultiChannelTiff(channels=5, scale='none')(dict(img_path=path))
    chw = LoadMultiChannelTiff(layout='CHW', scale='none')
    np.testing.assert_array_equal(
        chw(dict(img_path=path))['img'], a.transpose(1, 2, 0)
    )
    hwc = LoadMultiChannelTiff(layout='HWC', scale='none')
    np.testing.assert_array_equal(hwc(dict(img_path=path))['img'], a)


def test_2d_file_is_one_channel(tmp_path):
    a = _image(c=1)[0]
    path = _write(tmp_path / 'gray.tif', a)
    img = LoadMultiChannelTiff(scale='none')(dict(img_path=path))['img']
    assert img.shape == (6, 7, 1)
    np.testing.assert_array_equal(img[..., 0], a)


def test_percentile_scaling_per_channel(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 65536, (4, 20, 30)).astype(np.uint16)
    a[1] = (a[1] // 16) + 1000  # another range in channel 1
    a[3] = 777  # a constant channel
    path = _write(tmp_path / 'p.tif', a)
    # (0, 100) percentiles: each channel's own min -> 0 and max -> 1
    img = LoadMultiChannelTiff(percentiles=(0, 100))(dict(img_path=path))[
        'img'
    ]
    for c in range(3):
        x = a[c].astype(np.float64)
        want = (x - x.min()) / (x.max() - x.min())
        np.testing.assert_allclose(img[..., c], want, atol=1e-6)
    np.testing.assert_array_equal(img[..., 3], 0.0)
    # default (1, 99.8): a hot pixel does not set the range
    a[2, 0, 0] = 65535
    a[2, 1:] = 100 + (np.arange(19 * 30).reshape(19, 30) % 50)
    a[2, 0, 1:] = 120
    path = _write(tmp_path / 'hot.tif', a)
    img = LoadMultiChannelTiff()(dict(img_path=path))['img']
    lo, hi = np.percentile(a[2].astype(np.float64), [1.0, 99.8])
    assert hi < 200  # the hot pixel sits above the 99.8th percentile
    np.testing.assert_allclose(
        img[..., 2], np.clip((a[2] - lo) / (hi - lo), 0, 1), atol=1e-6
    )
    assert img[0, 0, 2] == 1.0 and img.min() >= 0.0


def test_fixed_scaling(tmp_path):
    a = np.array([[[0, 4095, 8190]], [[0, 100, 200]]], np.uint16)  # (2,1,3)
    path = _write(tmp_path / 'f.tif', a)
    img = LoadMultiChannelTiff(layout='CHW', scale=(0, 4095))(
        dict(img_path=path)
    )['img']
    np.testing.assert_allclose(img[0, :, 0], [0.0, 1.0, 1.0])  # clipped
    np.testing.assert_allclose(img[0, :, 1], [0.0, 100 / 4095, 200 / 4095])
    per_channel = LoadMultiChannelTiff(
        layout='CHW', scale=[(0, 8190), (100, 200)]
    )(dict(img_path=path))['img']
    np.testing.assert_allclose(per_channel[0, :, 0], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(per_channel[0, :, 1], [0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match='one per channel'):
        LoadMultiChannelTiff(channels=5, scale=[(0, 1), (0, 2)])
    with pytest.raises(ValueError, match='lo < hi'):
        LoadMultiChannelTiff(scale=(10, 10))


def test_channel_indices_pick_and_order(tmp_path):
    a = _image()
    path = _write(tmp_path / 'a.tif', a)
    t = LoadMultiChannelTiff(channels=5, channel_indices=[4, 0], scale='none')
    img = t(dict(img_path=path))['img']
    np.testing.assert_array_equal(img, a[[4, 0]].transpose(1, 2, 0))
    with pytest.raises(ValueError, match='channel_indices'):
        LoadMultiChannelTiff(channels=5, channel_indices=[5])


def _bad_folder(root):
    a = _image(h=8, w=8)
    good = []
    for i in range(3):
        good.append(_write(root / f'good{i}.tif', a))
    (root / 'empty.tif').write_bytes(b'')
    blob = (root / 'good0.tif').read_bytes()
    (root / 'truncated.tif').write_bytes(blob[: len(blob) // 2])
    (root / 'text.tif').write_bytes(b'not a tiff at all' * 10)
    _write(root / 'four.tif', a[:4])
    _write(root / 'stack.tif', np.stack([a, a]))  # (2, 5, 8, 8): a z-stack
    nan = a.astype(np.float32)
    nan[2, 3, 4] = np.nan
    _write(root / 'nan.tif', nan)
    bad = {
        'empty.tif': 'zero-byte',
        'truncated.tif': 'not a readable TIFF',
        'text.tif': 'not a readable TIFF',
        'four.tif': 'has 4 channels',
        'stack.tif': 'only 2D images',
        'nan.tif': 'NaN',
    }
    return good, bad


def test_bad_files_skipped_and_named(tmp_path):
    good, bad = _bad_folder(tmp_path)
    ds = ImageFolderDataset(
        data_root=str(tmp_path),
        pipeline=[
            dict(type='LoadMultiChannelTiff', channels=5),
            dict(type='PackInputs'),
        ],
        max_bad_ratio=1.0,
    )
    assert len(ds) == 9
    skipped, served = {}, set()
    for i in range(len(ds)):
        out = ds[i]
        assert tuple(out['inputs'].shape) == (5, 8, 8)
        served.add(out['data_samples'].img_path)
        for path, reason in out['data_samples'].skipped_files:
            skipped[osp.basename(path)] = reason
    assert served <= set(good)
    assert set(skipped) == set(bad)
    for name, words in bad.items():
        assert words in skipped[name], (name, skipped[name])
    with pytest.raises(BadImageError, match='file not found'):
        LoadMultiChannelTiff()(dict(img_path=str(tmp_path / 'gone.tif')))


def test_demo_maker_writes_both_layouts(multichannel_data_root):
    CLASSES = load_tool('misc/make_multichannel_dataset.py').CLASSES

    root = multichannel_data_root
    with tifffile.TiffFile(
        osp.join(root, 'train', CLASSES[0], '0000.tif')
    ) as t:
        assert t.series[0].axes == 'CYX' and t.series[0].dtype == np.uint16
    with tifffile.TiffFile(
        osp.join(root, 'train', CLASSES[0], '0001.tif')
    ) as t:
        assert t.series[0].axes == 'YXS'
    ds = ImageFolderDataset(
        data_root=osp.join(root, 'train'),
        with_label=True,
        pipeline=[dict(type='LoadMultiChannelTiff', channels=5)],
    )
    assert ds.metainfo['classes'] == CLASSES
    assert len(ds) == 2 * len(CLASSES)
    img = ds[1]['img']
    assert img.shape == (32, 32, 5) and 0.0 <= img.min() and img.max() <= 1.0


def test_loader_pickles_for_spawned_workers(tmp_path):
    path = _write(tmp_path / 'a.tif', _image())
    t = pickle.loads(pickle.dumps(LoadMultiChannelTiff(channels=5)))
    assert t(dict(img_path=path))['img'].shape == (6, 7, 5)


def test_missing_tifffile_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'tifffile', None)  # import fails
    with pytest.raises(ImportError, match=r'LoadMultiChannelTiff.*\[multi'):
        LoadMultiChannelTiff(channels=5)
