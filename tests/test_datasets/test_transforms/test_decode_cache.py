"""Fast 16-bit conversion and the on-disk decode cache."""

import os
import threading

import cv2
import numpy as np
import pytest

from mmssl.datasets.transforms.decode_cache import DecodeCache
from mmssl.datasets.transforms.loading import (
    BadImageError,
    LoadImageRobust,
    scale_to_uint8,
)


def _floor_stretch(img, lo, hi):
    """Intended stretch in float64: floor(clip((x-lo)*255/(hi-lo)))."""
    x = (img.astype(np.float64) - lo) * 255.0 / (hi - lo)
    return np.floor(np.clip(x, 0, 255)).astype(np.int64)


@pytest.mark.parametrize(
    'scale,lo,hi',
    [
        ('minmax', 3, 60001),
        ('full', 0, 65535),
        ((0, 4095), 0, 4095),
        ((1000, 1003), 1000, 1003),
        ((7, 65535), 7, 65535),
        ((0.5, 4000.5), 0.5, 4000.5),  # fractional: float path
    ],
)
def test_uint16_stretch_matches_float64_reference(scale, lo, hi):
    rng = np.random.RandomState(0)
    img = rng.randint(3, 60002, (64, 80, 3)).astype(np.uint16)
    img[0, 0, 0], img[0, 0, 1] = 3, 60001
    img[1, :, 0] = np.arange(80) + 995  # around a fixed low bound
    out = scale_to_uint8(img, scale)
    assert out.dtype == np.uint8 and out.shape == img.shape
    diff = np.abs(out.astype(np.int64) - _floor_stretch(img, lo, hi))
    assert diff.max() <= 1
    assert (diff == 0).mean() > 0.999
    gray = np.ascontiguousarray(img[..., 0])
    diff = np.abs(
        scale_to_uint8(gray, scale).astype(np.int64)
        - _floor_stretch(gray, *_range(gray, scale, lo, hi))
    )
    assert diff.max() <= 1


def _range(img, scale, lo, hi):
    if scale == 'minmax':
        return float(img.min()), float(img.max())
    return lo, hi


def test_every_uint16_value_and_clipping():
    x = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    for lo, hi in [(0, 4095), (100, 101), (60000, 65535), (0, 65535)]:
        diff = scale_to_uint8(x, (lo, hi)).astype(int) - _floor_stretch(
            x, lo, hi
        )
        assert np.abs(diff).max() <= 1 and (diff != 0).sum() <= 8
    out = scale_to_uint8(x, (100, 101))
    assert out[0, :100].max() == 0 and out.reshape(-1)[101:].min() == 255


def _write16(path, shape, seed=0):
    rng = np.random.RandomState(seed)
    img = rng.randint(0, 65536, shape).astype(np.uint16)
    cv2.imwrite(str(path), img)
    return img


@pytest.mark.parametrize(
    'shape,kw',
    [
        ((90, 130), dict(channels=3, channel_order='rgb')),
        ((90, 130, 3), dict(channels=3)),
        ((90, 130, 3), dict(channels=3, channel_order='rgb')),
        ((90, 130, 3), dict(channels=1, scale_16bit=(0, 40000))),
    ],
)
def test_cache_hit_equals_miss_and_uncached(tmp_path, shape, kw):
    path = str(tmp_path / 'a.png')
    _write16(path, shape)
    plain = LoadImageRobust(max_side=64, **kw)(dict(img_path=path))['img']
    cached = LoadImageRobust(
        decode_cache=dict(dir=str(tmp_path / 'c'), max_side=64), **kw
    )
    miss = cached(dict(img_path=path))['img']
    entries = [f for _, _, fs in os.walk(tmp_path / 'c') for f in fs]
    assert len(entries) == 1 and entries[0].endswith('.px')
    hit = cached(dict(img_path=path))['img']
    assert max(plain.shape[:2]) == 64
    for img in (miss, hit):
        assert img.dtype == plain.dtype and img.shape == plain.shape
        assert np.array_equal(img, plain)
    assert hit.flags.writeable


def test_cache_is_used_and_keyed(tmp_path, monkeypatch):
    path = str(tmp_path / 'a.png')
    _write16(path, (40, 50))
    root = str(tmp_path / 'c')
    load = LoadImageRobust(decode_cache=dict(dir=root, max_side=32))
    first = load(dict(img_path=path))['img']
    calls = []
    orig = LoadImageRobust._decode
    monkeypatch.setattr(
        LoadImageRobust,
        '_decode',
        lambda self, buf, p: calls.append(p) or orig(self, buf, p),
    )
    assert np.array_equal(load(dict(img_path=path))['img'], first)
    assert calls == []  # served from the cache
    other = LoadImageRobust(
        decode_cache=dict(dir=root, max_side=32), scale_16bit='full'
    )
    other(dict(img_path=path))
    assert len(calls) == 1  # other settings: other key
    new = _write16(path, (40, 50), seed=1)  # new content: new mtime/size
    os.utime(path, ns=(1, 1))
    out = load(dict(img_path=path))['img']
    assert len(calls) == 2
    expect = LoadImageRobust(max_side=32)(dict(img_path=path))['img']
    assert np.array_equal(out, expect) and new.shape == (40, 50)


def test_eight_bit_files_not_stored_by_default(tmp_path):
    path = str(tmp_path / 'a.png')
    cv2.imwrite(path, np.full((20, 20, 3), 7, np.uint8))
    root = tmp_path / 'c'
    LoadImageRobust(decode_cache=dict(dir=str(root)))(dict(img_path=path))
    assert not root.exists()
    LoadImageRobust(
        decode_cache=dict(dir=str(root), only_high_bit_depth=False)
    )(dict(img_path=path))
    assert len(list(root.rglob('*.px'))) == 1


@pytest.mark.parametrize(
    'damage', ['truncate', 'flip_pixel', 'garbage', 'empty', 'header']
)
def test_corrupt_entry_is_ignored_and_rewritten(tmp_path, damage):
    path = str(tmp_path / 'a.png')
    _write16(path, (30, 40))
    load = LoadImageRobust(decode_cache=dict(dir=str(tmp_path / 'c')))
    good = load(dict(img_path=path))['img']
    entry = load._cache.entry_path(path)
    data = bytearray(open(entry, 'rb').read())
    if damage == 'truncate':
        data = data[:-5]
    elif damage == 'flip_pixel':
        data[-1] ^= 0xFF
    elif damage == 'garbage':
        data = bytearray(b'x' * 100)
    elif damage == 'empty':
        data = bytearray()
    else:
        data[4] = 99  # version
    open(entry, 'wb').write(bytes(data))
    assert DecodeCache.read(entry) is None
    assert np.array_equal(load(dict(img_path=path))['img'], good)
    assert np.array_equal(DecodeCache.read(entry), good[..., 0])


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    cache = DecodeCache(str(tmp_path / 'c'), 'settings')
    img = np.arange(200 * 300, dtype=np.uint8).reshape(200, 300)
    entry = cache.entry_path(__file__)
    threads = [
        threading.Thread(target=cache.write, args=(entry, img))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert np.array_equal(cache.read(entry), img)
    assert os.listdir(os.path.dirname(entry)) == [os.path.basename(entry)]


def test_unwritable_cache_and_bad_files(tmp_path):
    path = str(tmp_path / 'a.png')
    _write16(path, (30, 40))
    blocker = tmp_path / 'file'
    blocker.write_text('not a folder')
    load = LoadImageRobust(decode_cache=dict(dir=str(blocker)))
    expect = LoadImageRobust()(dict(img_path=path))['img']
    assert np.array_equal(load(dict(img_path=path))['img'], expect)
    bad = tmp_path / 'bad.png'
    bad.write_bytes(b'')
    with pytest.raises(BadImageError, match='zero-byte'):
        load(dict(img_path=str(bad)))
    with pytest.raises(BadImageError, match='not found'):
        load(dict(img_path=str(tmp_path / 'missing.png')))


def test_config_errors():
    with pytest.raises(ValueError, match="'dir'"):
        LoadImageRobust(decode_cache=dict(max_side=8))
    with pytest.raises(ValueError, match='differs'):
        LoadImageRobust(max_side=4, decode_cache=dict(dir='x', max_side=8))
    with pytest.raises(ValueError, match='Unknown decode_cache keys'):
        LoadImageRobust(decode_cache=dict(dir='x', size=8))
    assert LoadImageRobust(decode_cache=dict(dir='x', max_side=8)).max_side
