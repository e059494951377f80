import os.path as osp

import numpy as np
import pytest

from mmssl.datasets.transforms import (
    BadImageError,
    LoadImageRobust,
    scale_to_uint8,
)


def _load(root, rel, **kw):
    return LoadImageRobust(**kw)(dict(img_path=osp.join(root, rel)))['img']


def test_every_good_kind_is_hw3_uint8(messy_root):
    root, files = messy_root
    for rel, kind in files.items():
        if kind == 'bad':
            continue
        img = _load(root, rel)
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3, (
            rel,
            img.shape,
        )
        expected = (40, 24) if kind == 'exif' else (24, 40)
        assert img.shape[:2] == expected, (rel, img.shape)


def test_sixteen_bit_scaling(messy_root):
    root, _ = messy_root
    g16 = (np.arange(24 * 40).reshape(24, 40) * 60).astype(np.uint16)
    img = _load(root, 'a/gray16.png')
    assert (img[..., 0] == img[..., 1]).all()
    assert img.min() == 0 and img.max() == 255  # per-image min-max
    expected = np.round(g16 / g16.max() * 255)
    assert np.abs(img[..., 0] - expected).max() <= 1
    fixed = _load(root, 'a/gray16.png', scale_16bit=(0, 65535))
    assert np.abs(fixed[..., 0] - g16 / 65535 * 255).max() <= 1
    one = _load(root, 'a/nested/gray16.TIF', channels=1)
    assert one.shape == (24, 40)
    assert (scale_to_uint8(np.array([[5.0, 5.0]])) == 0).all()
    with pytest.raises(ValueError, match='scale_16bit'):
        LoadImageRobust(scale_16bit=(3, 1))


def test_rgba_palette_exif_order(messy_root):
    root, _ = messy_root
    ref = _load(root, 'a/rgb8.png')
    np.testing.assert_array_equal(_load(root, 'b/rgba.png'), ref)
    comp = _load(root, 'b/rgba.png', alpha='composite', background=255)
    np.testing.assert_allclose(
        comp, ref * (128 / 255) + 255 * 127 / 255, atol=1.5
    )
    rgb = _load(root, 'a/rgb8.png', channel_order='rgb')
    np.testing.assert_array_equal(rgb, ref[..., ::-1])
    # palette: each pixel is its index's palette colour, in BGR order
    from PIL import Image, ImageOps

    with Image.open(osp.join(root, 'b/palette.png')) as im:
        assert im.mode == 'P'
        index = np.asarray(im)  # (H, W) palette indices
        palette = im.getpalette()  # [r0, g0, b0, r1, ...]
    expected = np.zeros(index.shape + (3,), np.uint8)
    for y in range(index.shape[0]):
        for x in range(index.shape[1]):
            i = int(index[y, x])
            expected[y, x] = palette[3 * i : 3 * i + 3][::-1]
    assert len(np.unique(index)) > 10  # a real palette, not one colour
    np.testing.assert_array_equal(_load(root, 'b/palette.png'), expected)
    # EXIF orientation 6: displayed = stored rotated 90 degrees clockwise.
    rot = _load(root, 'b/exif_rot.JPEG').astype(float)
    with Image.open(osp.join(root, 'b/exif_rot.JPEG')) as im:
        assert im.size == (40, 24)  # stored landscape
        expected = np.asarray(ImageOps.exif_transpose(im))[..., ::-1]
    assert np.abs(rot - expected).mean() < 3  # decoder rounding only


@pytest.mark.parametrize(
    'rel,reason',
    [
        ('bad/zero.jpg', 'zero-byte'),
        ('bad/truncated.jpg', 'truncated'),
        ('bad/text.JPG', 'not a readable'),
        ('bad/missing.png', 'not found'),
    ],
)
def test_bad_files_raise_with_reason(messy_root, rel, reason):
    root, _ = messy_root
    with pytest.raises(BadImageError, match=reason) as e:
        _load(root, rel)
    assert e.value.path.endswith(rel)


def test_max_side_reduced_decoding(tmp_path):
    import cv2

    img = (
        np.random.RandomState(0)
        .randint(0, 256, (400, 820, 3))
        .astype(np.uint8)
    )
    cv2.imwrite(str(tmp_path / 'big.jpg'), img)
    cv2.imwrite(str(tmp_path / 'big.png'), img)
    loader = LoadImageRobust(max_side=200)
    with open(tmp_path / 'big.jpg', 'rb') as f:
        assert loader._jpeg_reduction(f.read()) == 4  # 820 / 4 >= 200
    j = _load(str(tmp_path), 'big.jpg', max_side=200)
    assert j.shape == (98, 200, 3)
    p = _load(str(tmp_path), 'big.png', max_side=200)
    assert max(p.shape[:2]) == 200 and p.shape[0] == 98
    assert _load(str(tmp_path), 'big.jpg').shape == (400, 820, 3)
