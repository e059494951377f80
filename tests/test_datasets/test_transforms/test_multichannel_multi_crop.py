"""MultiChannelMultiCrop: the DINO-family multi-crop on 5-channel 16-bit
TIFFs gives G + L float32 views with every channel, moves all channels
alike, and refuses the RGB-only parts of MultiCrop with the fix."""

import numpy as np
import pytest
from mmcv.transforms import Compose

from mmssl.registry import TRANSFORMS

tifffile = pytest.importorskip('tifffile')


def _img(h=40, w=48, c=5, seed=0) -> np.ndarray:
    """(H, W, C) float32 with a distinct level in every channel."""
    rng = np.random.default_rng(seed)
    img = rng.uniform(0, 1, (h, w, c)) + np.arange(c)
    return img.astype(np.float32)


def _crop(**kwargs):
    return TRANSFORMS.build(dict(type='MultiChannelMultiCrop', **kwargs))


def test_dino_pipeline_on_five_channel_tiff(tmp_path):
    """Load a (C, H, W) uint16 TIFF, 2 global + 4 local crops, pack."""
    raw = (_img() * 10000).astype(np.uint16).transpose(2, 0, 1)
    path = str(tmp_path / 'cells.tif')
    tifffile.imwrite(path, raw)
    pipeline = Compose(
        [
            TRANSFORMS.build(t)
            for t in [
                dict(type='LoadMultiChannelTiff', channels=5),
                dict(
                    type='MultiChannelMultiCrop',
                    num_global_crops=2,
                    num_local_crops=4,
                    global_size=32,
                    local_size=16,
                    jitter=dict(drop_prob=0.5),
                    blur_kernel_size=3,
                ),
                dict(type='PackInputs'),
            ]
        ]
    )
    np.random.seed(0)
    for _ in range(3):
        out = pipeline(dict(img_path=path))
        shapes = [tuple(x.shape) for x in out['inputs']]
        assert shapes == [(5, 32, 32)] * 2 + [(5, 16, 16)] * 4, shapes
        assert all(str(x.dtype) == 'torch.float32' for x in out['inputs'])
        assert all(x.isfinite().all() for x in out['inputs'])


def test_full_crop_is_the_image_and_flips_move_every_channel():
    img = _img(32, 32)
    kw = dict(
        num_global_crops=1,
        num_local_crops=0,
        global_size=32,
        global_scale=(1.0, 1.0),
        ratio=(1.0, 1.0),
        jitter=None,
        global_blur_prob=0.0,
    )
    same = _crop(hflip_prob=0.0, vflip_prob=0.0, **kw)
    (view,) = same(dict(img=img.copy()))['img']
    assert view.dtype == np.float32 and view.shape == (32, 32, 5)
    np.testing.assert_array_equal(view, img)
    (view,) = _crop(hflip_prob=1.0, vflip_prob=0.0, **kw)(dict(img=img))['img']
    np.testing.assert_array_equal(view, img[:, ::-1])
    (view,) = _crop(hflip_prob=0.0, vflip_prob=1.0, **kw)(dict(img=img))['img']
    np.testing.assert_array_equal(view, img[::-1])


def test_crops_are_regions_of_the_image():
    """A local crop at its own size is a window of the input: each of its
    channels is found at the same place in that channel of the image."""
    img = _img(24, 24, c=6)
    crop = _crop(
        num_global_crops=1,
        num_local_crops=3,
        global_size=24,
        local_size=12,
        local_scale=(0.25, 0.25),
        ratio=(1.0, 1.0),
        hflip_prob=0.0,
        vflip_prob=0.0,
        jitter=None,
        global_blur_prob=0.0,
        local_blur_prob=0.0,
    )
    np.random.seed(1)
    out = crop(dict(img=img))
    assert out['num_global_crops'] == 1 and out['img_shape'] == (24, 24)
    for view in out['img'][1:]:
        assert view.shape == (12, 12, 6)
        hits = [
            (t, s)
            for t in range(13)
            for s in range(13)
            if np.array_equal(img[t : t + 12, s : s + 12], view)
        ]
        assert len(hits) == 1, hits


def test_jitter_and_blur_keep_channel_count_and_range():
    img = _img(32, 32)
    crop = _crop(
        num_local_crops=2,
        global_size=16,
        local_size=8,
        jitter=dict(brightness=0.4, contrast=0.4, gamma=0.3, prob=1.0),
        global_blur_prob=1.0,
        local_blur_prob=1.0,
        blur_kernel_size=3,
    )
    np.random.seed(0)
    views = crop(dict(img=img))['img']
    assert [v.shape for v in views] == [(16, 16, 5)] * 2 + [(8, 8, 5)] * 2
    for v in views:
        assert v.dtype == np.float32 and (v >= 0).all()
    # a 2D (H, W) image gives (h, w, 1) views
    views = crop(dict(img=img[..., 0]))['img']
    assert views[0].shape == (16, 16, 1)


@pytest.mark.parametrize(
    'rgb_arg',
    [
        dict(color_jitter=(0.4, 0.4, 0.2, 0.1)),
        dict(grayscale_prob=0.2),
        dict(global_solarize_prob=(0.0, 0.2)),
        dict(channel_order='bgr'),
    ],
)
def test_rgb_arguments_are_refused_with_the_fix(rgb_arg):
    name = next(iter(rgb_arg))
    with pytest.raises(ValueError) as err:
        _crop(**rgb_arg)
    msg = str(err.value)
    assert f"has no '{name}'" in msg, msg
    assert 'ChannelIntensityJitter' in msg and 'jitter=dict(' in msg, msg


def test_unknown_argument_and_applied_twice():
    with pytest.raises(TypeError, match='unexpected arguments'):
        _crop(global_sise=32)
    crop = _crop(num_local_crops=0, global_size=8)
    views = crop(dict(img=_img()))['img']
    with pytest.raises(TypeError, match='applied twice'):
        crop(dict(img=views))
