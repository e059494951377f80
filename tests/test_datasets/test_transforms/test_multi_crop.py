import math

import numpy as np
import pytest
from mmengine.dataset import Compose, default_collate

from mmssl.datasets.transforms import MultiCrop
from mmssl.datasets.transforms.multi_crop import _hue_rotation

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
    R = _hue_rotation(2 * math.pi / 3)
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
