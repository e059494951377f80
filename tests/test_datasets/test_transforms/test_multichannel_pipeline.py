"""Channel-aware augmentation of 5-channel images: crops and flips keep
the channels, ChannelIntensityJitter acts per channel, and RGB-only
transforms are refused with the fix."""

import numpy as np
import pytest
from mmcv.transforms import Compose

from mmssl.datasets import ImageFolderDataset
from mmssl.registry import TRANSFORMS

tifffile = pytest.importorskip('tifffile')


def _img(h=40, w=50, c=5, seed=0) -> np.ndarray:
    """(H, W, C) float32 with a distinct ramp in every channel."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 1.0, (h, w, c)).astype(np.float32)
    return base + np.arange(c, dtype=np.float32)


def test_pipeline_keeps_five_channels(tmp_path):
    a = (_img() * 10000).astype(np.uint16).transpose(2, 0, 1)  # (C, H, W)
    path = str(tmp_path / 'x.tif')
    tifffile.imwrite(path, a)
    view = [
        dict(
            type='RandomResizedCrop',
            scale=32,
            crop_ratio_range=(0.3, 1.0),
            backend='cv2',
        ),
        dict(type='RandomFlip', prob=0.5, direction='vertical'),
        dict(type='ChannelIntensityJitter', drop_prob=0.3),
    ]
    pipeline = Compose(
        [
            TRANSFORMS.build(t)
            for t in [
                dict(type='LoadMultiChannelTiff', channels=5),
                dict(type='MultiView', num_views=2, transforms=[view]),
                dict(type='PackInputs'),
            ]
        ]
    )
    np.random.seed(0)
    for _ in range(5):
        out = pipeline(dict(img_path=path))
        assert len(out['inputs']) == 2
        for x in out['inputs']:
            assert tuple(x.shape) == (5, 32, 32), x.shape
            assert str(x.dtype) == 'torch.float32'


def test_crop_and_flip_move_every_channel_alike():
    img = _img()
    flip = TRANSFORMS.build(dict(type='RandomFlip', prob=1.0))
    out = flip(dict(img=img.copy()))['img']
    np.testing.assert_array_equal(out, img[:, ::-1])
    crop = TRANSFORMS.build(
        dict(
            type='RandomResizedCrop',
            scale=(40, 50),  # (h, w): no resize, a pure crop
            crop_ratio_range=(1.0, 1.0),
            aspect_ratio_range=(1.25, 1.25),
            backend='cv2',
        )
    )
    out = crop(dict(img=img.copy()))['img']
    np.testing.assert_allclose(out, img, rtol=1e-6)


def _jitter(**kwargs):
    cfg = dict(brightness=0.0, contrast=0.0, gamma=0.0)
    cfg.update(kwargs)
    return TRANSFORMS.build(dict(type='ChannelIntensityJitter', **cfg))


def test_brightness_is_one_factor_per_channel():
    img = _img()
    np.random.seed(1)
    out = _jitter(brightness=0.4)(dict(img=img.copy()))['img']
    ratio = out / img  # (H, W, C)
    per_channel = ratio.reshape(-1, 5)
    np.testing.assert_allclose(
        per_channel, per_channel[:1].repeat(2000, 0), rtol=1e-5
    )
    assert ((per_channel[0] >= 0.6) & (per_channel[0] <= 1.4)).all()
    assert np.ptp(per_channel[0]) > 1e-3  # channels drawn independently
    out = _jitter(brightness=0.4, per_channel=False)(dict(img=img.copy()))
    ratio = out['img'] / img
    np.testing.assert_allclose(ratio, ratio.flat[0], rtol=1e-5)


def test_contrast_keeps_the_mean_and_gamma_the_range():
    img = _img()
    np.random.seed(2)
    out = _jitter(contrast=0.4)(dict(img=img.copy()))['img']
    np.testing.assert_allclose(out.mean((0, 1)), img.mean((0, 1)), rtol=1e-5)
    k = out.std((0, 1)) / img.std((0, 1))
    assert ((k >= 0.6) & (k <= 1.4)).all() and np.ptp(k) > 1e-3
    out = _jitter(gamma=0.3)(dict(img=img.copy()))['img']
    np.testing.assert_allclose(out.max((0, 1)), img.max((0, 1)), rtol=1e-5)
    for c in range(5):  # monotone: the order of the pixels is kept
        order = np.argsort(img[..., c], axis=None)
        assert (np.diff(out[..., c].flat[order]) >= -1e-5).all()


def test_channel_drop_never_drops_everything():
    img = _img()
    np.random.seed(3)
    t = _jitter(drop_prob=1.0)
    for _ in range(10):
        out = t(dict(img=img.copy()))['img']
        kept = [c for c in range(5) if out[..., c].any()]
        assert len(kept) == 1
        np.testing.assert_array_equal(out[..., kept[0]], img[..., kept[0]])
    out = _jitter(drop_prob=1.0, prob=0.0)(dict(img=img.copy()))['img']
    np.testing.assert_array_equal(out, img)


def _dataset_with(transform: dict, root, channels=5):
    view = [dict(type='RandomFlip', prob=0.5), transform]
    return ImageFolderDataset(
        data_root=str(root),
        pipeline=[
            dict(type='LoadMultiChannelTiff', channels=channels),
            dict(type='MultiView', num_views=2, transforms=[view]),
            dict(type='PackInputs'),
        ],
        lazy_init=True,
    )


@pytest.mark.parametrize(
    'transform, fix',
    [
        (
            dict(
                type='RandomApply',
                transforms=[dict(type='ColorJitter', brightness=0.4)],
                prob=0.8,
            ),
            'ChannelIntensityJitter',
        ),
        (dict(type='HueSafeColorJitter', hue=0.1), 'ChannelIntensityJitter'),
        (dict(type='RandomGrayscale', prob=0.2), 'drop_prob'),
        (dict(type='MultiCrop'), 'MultiChannelMultiCrop'),
        (dict(type='Solarize', thr=128), 'leave it out'),
    ],
)
def test_rgb_only_transforms_refused(transform, fix, tmp_path):
    name = transform.get('transforms', [transform])[0]['type']
    with pytest.raises(ValueError) as err:
        _dataset_with(transform, tmp_path)
    msg = str(err.value)
    assert f'{name} is an RGB-only transform' in msg, msg
    assert 'with 5 channels' in msg and fix in msg, msg
    # RGB TIFFs (channels=3) may use them
    _dataset_with(transform, tmp_path, channels=3)


def test_rgb_only_transforms_refuse_at_run_time():
    img5 = (_img() * 50).astype(np.uint8)
    jitter = TRANSFORMS.build(dict(type='HueSafeColorJitter', hue=0.1))
    with pytest.raises(ValueError, match=r'HueSafeColorJitter.*5 channels'):
        jitter(dict(img=img5))
    crop = TRANSFORMS.build(dict(type='MultiCrop', global_size=16))
    with pytest.raises(
        ValueError, match=r'MultiCrop.*5 channels.*MultiChannelMultiCrop'
    ):
        crop(dict(img=img5))
    jitter(dict(img=img5[..., :3].copy()))  # 3 channels: fine
