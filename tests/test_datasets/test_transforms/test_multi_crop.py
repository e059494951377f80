import math
import re

import numpy as np
import pytest
from mmengine.dataset import Compose, default_collate

from mmssl.datasets.transforms import MultiCrop
from mmssl.datasets.transforms.color_matrix import hue_rotation
from mmssl.datasets.transforms.crop_args import (
    size_pair,
    value_range,
    view_probs,
)

PLAIN = dict(
    color_jitter_prob=0.0,
    grayscale_prob=0.0,
    global_blur_prob=0.0,
    local_blur_prob=0.0,
    global_solarize_prob=0.0,
    flip_prob=0.0,
)


def _img(h=48, w=64, c=3, seed=0):
    rng = np.random.RandomState(seed)
    shape = (h, w) if c is None else (h, w, c)
    return rng.randint(0, 256, shape).astype(np.uint8)


def test_default_counts_and_shapes():
    np.random.seed(0)
    out = MultiCrop()(dict(img=_img(120, 200)))
    views = out['img']
    assert len(views) == 10 and out['num_global_crops'] == 2
    assert all(v.shape == (224, 224, 3) for v in views[:2])
    assert all(v.shape == (96, 96, 3) for v in views[2:])
    assert all(v.dtype == np.uint8 for v in views)


@pytest.mark.parametrize(
    'shape', [(5, 3), (7, 9, 1), (30, 400, 3), (400, 30, 4), (1, 1, 3)]
)
def test_any_input_size(shape):
    np.random.seed(1)
    img = np.random.randint(0, 256, shape).astype(np.uint8)
    mc = MultiCrop(
        num_global_crops=2,
        num_local_crops=3,
        global_size=(32, 48),
        local_size=16,
    )
    views = mc(dict(img=img))['img']
    assert [v.shape for v in views] == [(32, 48, 3)] * 2 + [(16, 16, 3)] * 3


def test_zero_local_crops_and_errors():
    views = MultiCrop(num_local_crops=0, global_size=32)(dict(img=_img()))[
        'img'
    ]
    assert len(views) == 2
    with pytest.raises(ValueError, match='num_global_crops'):
        MultiCrop(num_global_crops=0)
    with pytest.raises(ValueError, match='global_scale'):
        MultiCrop(global_scale=(0.5, 0.1))
    with pytest.raises(TypeError, match='uint8'):
        MultiCrop()(dict(img=_img().astype(np.float32)))


def test_pack_and_collate_contract():
    pipe = Compose(
        [
            dict(
                type='MultiCrop',
                global_size=32,
                local_size=16,
                num_local_crops=3,
            ),
            dict(type='PackInputs', meta_keys=('num_global_crops',)),
        ]
    )
    batch = default_collate([pipe(dict(img=_img(seed=i))) for i in range(2)])
    shapes = [tuple(t.shape) for t in batch['inputs']]
    assert shapes == [(2, 3, 32, 32)] * 2 + [(2, 3, 16, 16)] * 3
    assert batch['data_samples'][0].num_global_crops == 2


def test_full_crop_and_flip_are_exact():
    img = _img(32, 32)
    mc = MultiCrop(
        num_local_crops=0,
        global_size=32,
        global_scale=(1.0, 1.0),
        ratio=(1.0, 1.0),
        **dict(PLAIN, flip_prob=1.0),
    )
    views = mc(dict(img=img))['img']
    np.testing.assert_array_equal(views[0], img[:, ::-1])


def test_brightness_is_a_scale():
    img = np.full((16, 16, 3), 100, np.uint8)
    img[:8] = 50
    mc = MultiCrop(
        num_local_crops=0,
        global_size=16,
        global_scale=(1, 1),
        ratio=(1, 1),
        **dict(PLAIN, color_jitter_prob=1.0),
        color_jitter=(0.4, 0, 0, 0),
    )
    np.random.seed(3)
    v = mc(dict(img=img))['img'][0].astype(float)
    f = v[8:].mean() / 100
    assert 0.6 - 1e-2 <= f <= 1.4 + 1e-2
    np.testing.assert_allclose(v[:8], 50 * f, atol=1)


def test_grayscale_uses_luma_in_bgr_order():
    img = np.zeros((8, 8, 3), np.uint8)
    img[..., 2] = 200  # pure red in BGR
    mc = MultiCrop(
        num_local_crops=0,
        global_size=8,
        global_scale=(1, 1),
        ratio=(1, 1),
        **dict(PLAIN, grayscale_prob=1.0),
    )
    v = mc(dict(img=img))['img'][0]
    assert (v == round(0.299 * 200)).all()


def test_solarize_and_blur():
    img = _img(16, 16)
    base = dict(
        num_local_crops=0, global_size=16, global_scale=(1, 1), ratio=(1, 1)
    )
    v = MultiCrop(**base, **dict(PLAIN, global_solarize_prob=1.0))(
        dict(img=img)
    )['img'][0]
    expected = np.where(img >= 128, 255 - img, img)
    np.testing.assert_array_equal(v, expected)
    np.random.seed(0)
    v = MultiCrop(
        **base,
        **dict(PLAIN, global_blur_prob=(1.0, 0.0)),
        blur_sigma=(2.0, 2.0),
    )(dict(img=img))['img']
    # 9-tap Gaussian, sigma 2, separable, mirrored border without repeating
    # the edge pixel (dcb|abcd|cba), float64 then rounded: 8-bit fixed
    # point rounding may differ by one grey level
    assert np.abs(v[0].astype(float) - _gaussian_blur(img, 9, 2.0)).max() <= 1
    assert np.abs(v[0].astype(float) - img).mean() > 20  # it did blur
    np.testing.assert_array_equal(v[1], img)


def _gaussian_blur(img, size, sigma):
    """Reference blur written out with numpy (no cv2)."""
    r = size // 2
    k = np.exp(-((np.arange(size) - r) ** 2) / (2 * sigma**2))
    k /= k.sum()
    x = np.pad(img.astype(np.float64), ((r, r), (r, r), (0, 0)), 'reflect')
    h, w = img.shape[:2]
    rows = sum(k[i] * x[:, i : i + w] for i in range(size))  # along x
    out = sum(k[i] * rows[i : i + h] for i in range(size))  # along y
    return np.round(out)


def test_hue_rotation_properties():
    R = hue_rotation(2 * math.pi / 3)
    np.testing.assert_allclose(R @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(R @ [0.5, 0.5, 0.5], [0.5] * 3, atol=1e-12)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)


def test_default_probabilities_per_view():
    mc = MultiCrop()
    assert mc.global_blur_prob == [1.0, 0.1]
    assert mc.local_blur_prob == [0.5] * 8
    assert mc.global_solarize_prob == [0.0, 0.2]
    assert mc.local_solarize_prob == [0.0] * 8


def test_seeded_by_numpy_global_rng():
    mc = MultiCrop(global_size=24, local_size=8, num_local_crops=2)
    np.random.seed(7)
    a = mc(dict(img=_img()))['img']
    np.random.seed(7)
    b = mc(dict(img=_img()))['img']
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_crop_area_within_scale():
    mc = MultiCrop(num_local_crops=0)
    np.random.seed(0)
    for _ in range(200):
        top, left, ch, cw = mc._crop_box(100, 300, (0.05, 0.32))
        assert 0 <= top and top + ch <= 100 and 0 <= left
        assert left + cw <= 300
        assert 0.04 <= ch * cw / 30000 <= 0.34
        assert 0.7 <= cw / ch <= 1.4


def _raises(exc, message):
    """pytest.raises for the whole message, read literally."""
    return pytest.raises(exc, match='^' + re.escape(message) + '$')


def test_helpers_pair_probs_range():
    assert size_pair(np.int64(5), 'x') == (5, 5) and size_pair(
        [3, 4], 'x'
    ) == (3, 4)
    assert size_pair((1, 1), 'x') == (1, 1)
    for bad in [(0, 4), (4, -1), (1, 2, 3)]:
        with _raises(
            ValueError,
            f'sz must be a positive int or (h, w), got {tuple(bad)!r}.',
        ):
            size_pair(bad, 'sz')
    assert view_probs(0.3, 2, 'p') == [0.3, 0.3]
    assert view_probs([0.1, 0.9], 4, 'p') == [0.1, 0.9, 0.9, 0.9]
    assert view_probs([0.2, 0.4, 0.6], 2, 'p') == [0.2, 0.4]
    assert view_probs([0.1, 0.5, 0.9], 5, 'p') == [0.1, 0.5, 0.9, 0.9, 0.9]
    assert (
        view_probs([], 0, 'p') == [] and view_probs([1.0, 0.0], 0, 'p') == []
    )
    assert view_probs(1, 1, 'p') == [1.0] and view_probs(0.0, 1, 'p') == [0.0]
    with _raises(ValueError, 'p is empty but 2 views need a value.'):
        view_probs([], 2, 'p')
    for bad in (1.5, -0.1, [0.5, 1.01]):
        with _raises(ValueError, f'p values must be in [0, 1], got {bad!r}.'):
            view_probs(bad, 2, 'p')
    assert value_range((0.5, 0.5), 'r') == (0.5, 0.5)
    assert value_range([-1, 2], 'r', positive=False) == (-1.0, 2.0)
    for bad in [(0.5, 0.1), (0.0, 1.0)]:
        msg = f'r must be (low, high) with 0 < low <= high, got {bad!r}.'
        with _raises(ValueError, msg):
            value_range(bad, 'r')


def test_hue_rotation_is_the_axis_angle_matrix():
    # Rodrigues' formula about k = (1, 1, 1) / sqrt(3), a quarter turn:
    # R = K + k k^T with K the cross-product matrix of k
    s = 1 / math.sqrt(3)
    want = np.array(
        [
            [1 / 3, 1 / 3 - s, 1 / 3 + s],
            [1 / 3 + s, 1 / 3, 1 / 3 - s],
            [1 / 3 - s, 1 / 3 + s, 1 / 3],
        ]
    )
    np.testing.assert_allclose(hue_rotation(math.pi / 2), want, atol=1e-12)


def test_constructor_messages_name_the_argument():
    cases = [
        (dict(global_size=0), 'global_size must be a positive int or (h, w)'),
        (dict(local_size=(2, 0)), 'local_size must be a positive int or'),
        (dict(gram_size=-4), 'gram_size must be a positive int or (h, w)'),
        (dict(global_scale=(0, 1)), 'global_scale must be (low, high)'),
        (dict(local_scale=(0.5, 0.1)), 'local_scale must be (low, high)'),
        (dict(ratio=(2, 1)), 'ratio must be (low, high)'),
        (dict(blur_sigma=(0, 1)), 'blur_sigma must be (low, high)'),
        (dict(global_blur_prob=2), 'global_blur_prob values must be in'),
        (dict(local_blur_prob=[]), 'local_blur_prob is empty but 8 views'),
        (dict(global_solarize_prob=-1), 'global_solarize_prob values must'),
        (dict(local_solarize_prob=[]), 'local_solarize_prob is empty but 8'),
        (dict(num_global_crops=0), 'MultiCrop needs num_global_crops >= 1'),
        (dict(num_local_crops=-1), 'MultiCrop needs num_global_crops >= 1'),
    ]
    for kw, start in cases:
        with pytest.raises(ValueError, match='^' + re.escape(start)):
            MultiCrop(**kw)
    jit = 'color_jitter must be (brightness, contrast, saturation, hue) >= 0'
    for bad in [(0.4, 0.4, 0.2), (0.4, -0.1, 0.2, 0.1)]:
        with _raises(ValueError, f'{jit}, got {bad!r}.'):
            MultiCrop(color_jitter=bad)
    with _raises(ValueError, 'hue jitter must be <= 0.5, got 0.6.'):
        MultiCrop(color_jitter=(0, 0, 0, 0.6))
    assert MultiCrop(color_jitter=(0, 0, 0, 0.5)).color_jitter[3] == 0.5
    for k in (0, 4, -3):
        msg = f'blur_kernel_size must be odd and positive or None, got {k}.'
        with _raises(ValueError, msg):
            MultiCrop(blur_kernel_size=k)
    assert MultiCrop(blur_kernel_size=1).blur_kernel_size == 1
    assert MultiCrop(blur_kernel_size=None).blur_kernel_size is None
    msg = (
        "interpolation must be one of ['area', 'bicubic', 'bilinear', "
        "'nearest', 'auto'], got 'lanczos'."
    )
    with _raises(ValueError, msg):
        MultiCrop(interpolation='lanczos')
    for name in ('area', 'bicubic', 'bilinear', 'nearest', 'auto'):
        assert MultiCrop(interpolation=name).interpolation == name
    with _raises(
        ValueError, "channel_order must be 'bgr' or 'rgb', got 'RGB'."
    ):
        MultiCrop(channel_order='RGB')
    one = MultiCrop(num_global_crops=1, num_local_crops=0)
    assert (one.num_global_crops, one.num_local_crops) == (1, 0)


def test_constructor_defaults_and_derived_tables():
    mc = MultiCrop()
    assert (mc.flip_prob, mc.color_jitter_prob, mc.grayscale_prob) == (
        0.5,
        0.8,
        0.2,
    )
    assert mc.global_scale == (0.32, 1.0) and mc.local_scale == (0.05, 0.32)
    assert mc.ratio == (0.75, 4 / 3) and mc.blur_sigma == (0.1, 2.0)
    assert mc.color_jitter == (0.4, 0.4, 0.2, 0.1)
    assert mc.blur_kernel_size == 9 and mc.interpolation == 'auto'
    assert mc.channel_order == 'bgr' and mc.gram_size is None
    lut = MultiCrop(solarize_threshold=200)._solarize_lut
    assert lut.dtype == np.uint8
    assert lut[199] == 199 and lut[200] == 55 and lut[255] == 0
    np.testing.assert_allclose(mc._luma, [0.114, 0.587, 0.299])
    rgb = MultiCrop(channel_order='rgb')
    assert rgb.channel_order == 'rgb'
    np.testing.assert_array_equal(rgb._perm, np.eye(3))
    np.testing.assert_allclose(rgb._luma, [0.299, 0.587, 0.114])
    np.testing.assert_array_equal(mc._perm, np.eye(3)[[2, 1, 0]])


def test_to_3ch_and_transform_messages():
    grey = np.arange(6, dtype=np.uint8).reshape(2, 3)
    for img in (grey, grey[..., None]):
        out = MultiCrop._to_3ch(img)
        assert out.shape == (2, 3, 3)
        for c in range(3):
            np.testing.assert_array_equal(out[..., c], grey)
    rgba = _img(4, 5, 4)
    np.testing.assert_array_equal(MultiCrop._to_3ch(rgba), rgba[..., :3])
    rgb = _img(4, 5, 3)
    assert MultiCrop._to_3ch(rgb) is rgb
    for shape in [(4, 5, 2), (4, 5, 3, 1)]:
        msg = (
            'MultiCrop expects an HxW, HxWx1, HxWx3 or HxWx4 image, got '
            f'shape {shape}.'
        )
        with _raises(ValueError, msg):
            MultiCrop._to_3ch(np.zeros(shape, np.uint8))
    msg = (
        "MultiCrop expects one decoded image in results['img'], got a list "
        '(is it applied twice?).'
    )
    with _raises(TypeError, msg):
        MultiCrop()(dict(img=[_img()]))
    msg = (
        'MultiCrop works on uint8 images, got float32; load with '
        'LoadImageRobust (it scales 16-bit files to uint8).'
    )
    with _raises(TypeError, msg):
        MultiCrop()(dict(img=_img().astype(np.float32)))


LUMA_BGR = (0.114, 0.587, 0.299)


def _rotate_about_grey(bgr, turns):
    """Rotate an RGB colour about (1, 1, 1) by ``turns`` (Rodrigues), BGR
    in and out, written out per component."""
    r, g, b = bgr[2], bgr[1], bgr[0]
    t = 2 * math.pi * turns
    c, s, k = math.cos(t), math.sin(t), 1 / math.sqrt(3)
    dot = k * (r + g + b)
    cross = (k * (b - g), k * (r - b), k * (g - r))  # k x (r, g, b)
    rgb = [v * c + x * s + k * dot * (1 - c) for v, x in zip((r, g, b), cross)]
    return [rgb[2], rgb[1], rgb[0]]


def _replay_colour(seed, cj, gray, mean, pixels):
    """The colour steps one after another on each pixel, the random draws
    replayed in MultiCrop's order (jitter?, grey?, order, factors)."""
    rng = np.random.RandomState(seed)
    rng.rand(), rng.rand()  # jitter always (p = 1); grey decided by `gray`
    grey = lambda v: sum(w * x for w, x in zip(LUMA_BGR, v))  # noqa: E731
    cur = [list(mean)] + [list(p) for p in pixels]  # mean goes along
    for op in rng.permutation(4):
        if cj[op] <= 0:
            continue
        if op == 3:
            h = rng.uniform(-cj[3], cj[3])
            cur = [_rotate_about_grey(v, h) for v in cur]
            continue
        f = rng.uniform(max(0.0, 1 - cj[op]), 1 + cj[op])
        if op == 0:
            cur = [[f * x for x in v] for v in cur]
        elif op == 1:
            m = grey(cur[0])
            cur = [[f * x + (1 - f) * m for x in v] for v in cur]
        else:
            cur = [[f * x + (1 - f) * grey(v) for x in v] for v in cur]
    if gray:
        cur = [[grey(v)] * 3 for v in cur]
    return np.array(cur[1:])


@pytest.mark.parametrize('gray', [False, True])
@pytest.mark.parametrize(
    'cj', [(0.4, 0.4, 0.2, 0.1), (1.5, 1.5, 1.5, 0.5), (0.0, 0.7, 0.0, 0.0)]
)
def test_color_matrix_matches_the_steps_one_by_one(cj, gray):
    mc = MultiCrop(
        color_jitter=cj,
        color_jitter_prob=1.0,
        grayscale_prob=1.0 if gray else 0.0,
    )
    mean = np.array([40.0, 120.0, 200.0])  # BGR
    pixels = [[0, 0, 0], [255, 0, 0], [10, 200, 90], [255, 255, 255]]
    for seed in range(6):
        np.random.seed(seed)
        M = mc._color_matrix(mean)
        got = np.array([M[:, :3] @ p + M[:, 3] for p in pixels])
        want = _replay_colour(seed, cj, gray, mean, pixels)
        np.testing.assert_allclose(got, want, atol=1e-9)


def test_color_matrix_none_and_grey_only():
    off = MultiCrop(color_jitter_prob=0.0, grayscale_prob=0.0)
    assert off._color_matrix(np.zeros(3)) is None
    grey = MultiCrop(color_jitter_prob=0.0, grayscale_prob=1.0)
    M = grey._color_matrix(np.zeros(3))
    np.testing.assert_allclose(M, [list(LUMA_BGR) + [0.0]] * 3)


def test_crop_box_fallback_is_the_largest_centre_crop():
    mc = MultiCrop(num_local_crops=0)
    never = (4.0, 4.0)  # 4x the image area: every try fails
    # (h, w) -> (top, left, crop_h, crop_w), ratio range (3/4, 4/3)
    cases = {
        (10, 100): (0, 43, 10, 13),  # too wide: h x round(h * 4/3)
        (100, 10): (43, 0, 13, 10),  # too tall: round(w / (3/4)) x w
        (30, 36): (0, 0, 30, 36),  # within the range: the whole image
        (1, 1): (0, 0, 1, 1),
        (1, 100): (0, 49, 1, 1),
    }
    for (h, w), box in cases.items():
        np.random.seed(0)
        assert mc._crop_box(h, w, never) == box, (h, w)
    # exactly ten tries of two draws each before the fallback
    np.random.seed(3)
    mc._crop_box(10, 100, never)
    after = np.random.rand()
    np.random.seed(3)
    np.random.uniform(size=20)
    assert after == np.random.rand()


def test_crop_box_sides_and_positions():
    # aspect w/h = 2 and half the area of 100x100: 100 wide, 50 high
    wide = MultiCrop(ratio=(2.0, 2.0))
    np.random.seed(0)
    assert wide._crop_box(100, 100, (0.5, 0.5))[2:] == (50, 100)
    mixed = MultiCrop(ratio=(0.5, 2.0))
    np.random.seed(0)
    aspects = [
        b[3] / b[2]
        for b in (mixed._crop_box(1000, 1000, (0.1, 0.1)) for _ in range(40))
    ]
    assert min(aspects) < 0.8 and max(aspects) > 1.25
    # crops as wide (or as high) as the image, or one pixel, are accepted:
    # their position stays random instead of the fallback's centre
    square = MultiCrop(ratio=(1.0, 1.0))
    np.random.seed(0)
    tops = {square._crop_box(20, 10, (0.5, 0.5)) for _ in range(30)}
    assert all(b[1:] == (0, 10, 10) for b in tops) and len(tops) > 3
    lefts = {square._crop_box(10, 20, (0.5, 0.5)) for _ in range(30)}
    assert all(b[0] == 0 and b[2:] == (10, 10) for b in lefts)
    assert len(lefts) > 3
    ones = {square._crop_box(1, 5, (0.2, 0.2)) for _ in range(30)}
    assert all(b[0] == 0 and b[2:] == (1, 1) for b in ones)
    assert len(ones) > 3


def test_resize_paths():
    roi = np.arange(32 * 64, dtype=np.float32).reshape(32, 64) % 97
    # auto, shrink by k = min(32 // 8, 64 // 4) = 4: 4x4 box means, then
    # bilinear 16 -> 4 columns, which samples x = 4j + 1.5 (half-way
    # between box columns 4j + 1 and 4j + 2)
    out = MultiCrop(interpolation='auto')._resize(roi, (8, 4))
    boxes = roi.reshape(8, 4, 16, 4).mean(axis=(1, 3))
    want = (boxes[:, 1::4] + boxes[:, 2::4]) / 2
    np.testing.assert_allclose(out, want, rtol=1e-5)
    # a fixed method: nearest doubles each pixel
    small = np.array([[1, 2], [3, 4]], dtype=np.uint8)
    near = MultiCrop(interpolation='nearest')._resize(small, (4, 4))
    np.testing.assert_array_equal(near, small.repeat(2, 0).repeat(2, 1))
    # auto when shrinking by less than 2: plain bilinear (exact 2x up)
    ramp = np.array([[0, 200], [0, 200]], dtype=np.uint8)
    up = MultiCrop(interpolation='auto')._resize(ramp, (2, 4))
    np.testing.assert_array_equal(up[0], [0, 50, 150, 200])


def test_view_contrast_blur_and_img_shape():
    grey = np.full((40, 40, 3), 100, np.uint8)
    contrast = MultiCrop(
        num_local_crops=2,
        global_size=16,
        local_size=8,
        color_jitter=(0.0, 0.8, 0.0, 0.0),
        color_jitter_prob=1.0,
        grayscale_prob=0.0,
        global_blur_prob=0.0,
        local_blur_prob=0.0,
        global_solarize_prob=0.0,
    )
    np.random.seed(0)
    out = contrast(dict(img=grey))
    # contrast blends each view with its own mean grey: a flat image stays
    assert all((v == 100).all() for v in out['img'])
    assert out['img_shape'] == (16, 16)
    # blur_kernel_size=None: cv2 sizes the kernel from sigma (not 1x1)
    blur = MultiCrop(
        num_local_crops=0,
        global_size=16,
        blur_kernel_size=None,
        blur_sigma=(2.0, 2.0),
        global_blur_prob=1.0,
        global_solarize_prob=0.0,
        color_jitter_prob=0.0,
        grayscale_prob=0.0,
        global_scale=(1.0, 1.0),
        ratio=(1.0, 1.0),
        flip_prob=0.0,
    )
    img = _img(16, 16)
    np.random.seed(0)
    views = blur(dict(img=img))['img']
    assert all(np.abs(v.astype(int) - img).max() > 20 for v in views)


def test_resize_auto_box_average_removes_a_nyquist_pattern():
    # columns 0, 100, 0, 100, ...: a 2x2 box average is 50 everywhere, and
    # so is any bilinear resize of it; bilinear alone (20 -> 8, factor
    # 2.5) would blend neighbours 1:3 and give 25s and 75s
    roi = np.tile(np.array([0.0, 100.0], np.float32), (20, 10))
    out = MultiCrop(interpolation='auto')._resize(roi, (8, 8))
    np.testing.assert_allclose(out, 50.0, atol=1e-4)


def _coordinate_png(path, h: int, w: int) -> None:
    """A PNG whose pixel (r, c) is (B, G, R) = (r, c, 77): every pixel
    says where in the image it was."""
    import cv2

    rows, cols = np.mgrid[:h, :w]
    img = np.stack([rows, cols, np.full_like(rows, 77)], -1)
    assert cv2.imwrite(str(path), img.astype(np.uint8))


def test_transform_draws_each_view_with_its_own_scale(tmp_path):
    """Through ``transform`` on an image read from a file: the share of
    the image each view shows lies in ``global_scale`` for the global
    views and in ``local_scale`` for the local ones. The views are
    upsampled by nearest neighbour, so each shows every row and column of
    its crop, and the coordinates it holds give the crop's size."""
    from mmssl.datasets.transforms import LoadImageRobust

    h, w = 200, 250
    _coordinate_png(tmp_path / 'coords.png', h, w)
    load = LoadImageRobust()
    global_scale, local_scale = (0.4, 1.0), (0.05, 0.3)
    mc = MultiCrop(
        num_global_crops=2,
        num_local_crops=4,
        global_size=256,  # >= the longest crop side (250)
        local_size=160,  # >= sqrt(0.3 * h * w * 4 / 3) = 142
        global_scale=global_scale,
        local_scale=local_scale,
        interpolation='nearest',
        **PLAIN,
    )
    np.random.seed(0)
    shares = {'global': [], 'local': []}
    shown, sizes = [], []
    for _ in range(15):
        results = load(dict(img_path=str(tmp_path / 'coords.png')))
        views = mc.transform(results)['img']
        assert len(views) == 6
        for i, view in enumerate(views):
            assert (view[..., 2] == 77).all()  # no colour change
            rows, cols = view[..., 0].astype(int), view[..., 1].astype(int)
            ch = rows.max() - rows.min() + 1
            cw = cols.max() - cols.min() + 1
            shown.append(len(np.unique(rows)) * len(np.unique(cols)))
            sizes.append(ch * cw)
            kind = 'global' if i < 2 else 'local'
            shares[kind].append(ch * cw / (h * w))
    for kind, (lo, hi) in (('global', global_scale), ('local', local_scale)):
        # rounding of the crop's sides moves its share by < 1 %
        outside = [s for s in shares[kind] if not lo - 0.01 <= s <= hi + 0.01]
        assert not outside, (kind, outside)
    # the two ranges were both drawn from, not only their overlap's edge
    assert min(shares['global']) < 0.7 and max(shares['local']) > 0.15
    # every row and column of each crop is in its view, once: the sizes
    # above are the crops' own
    assert shown == sizes
