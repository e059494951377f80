"""HueSafeColorJitter: the hue jitter of the contrastive recipes, numpy 2."""

import os.path as osp

import mmcv
import numpy as np
import pytest
from mmengine.dataset import Compose
from mmengine.registry import init_default_scope

from mmssl.config import load_config
from mmssl.datasets.transforms import HueSafeColorJitter
from mmssl.datasets.transforms.color_jitter import adjust_hue
from mmssl.registry import TRANSFORMS
from mmssl.setup_env import register_all_modules

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.dirname(__file__))))


def _image(seed: int, size: int = 40) -> np.ndarray:
    return np.random.default_rng(seed).integers(
        0, 256, (size, size, 3), np.uint8
    )


@pytest.mark.parametrize('backend', ['cv2', 'pillow'])
@pytest.mark.parametrize('factor', [0.0, 0.05, 0.2, 0.5])
def test_positive_shifts_equal_mmcv(backend, factor):
    # mmcv's own adjust_hue still works for factors >= 0.
    img = _image(1)
    want = mmcv.adjust_hue(img, factor, backend=backend)
    np.testing.assert_array_equal(adjust_hue(img, factor, backend), want)


@pytest.mark.parametrize('backend', ['cv2', 'pillow'])
def test_negative_shift_turns_red_towards_magenta(backend):
    # Pure red has hue byte 0. A shift of -0.1 turn is int(-25.5) = -25,
    # i.e. byte 231 after the wrap; both OpenCV's full range and PIL map
    # byte 255 to 360 degrees, so h = 231 / 255 * 360 = 326.1 degrees:
    # between magenta (300) and red (360), where R = V, G = 0 and
    # B = V * (360 - h) / 60 = 144.
    red = np.zeros((4, 4, 3), np.uint8)
    red[..., 2] = 255
    out = adjust_hue(red, -0.1, backend)
    b_want = 255 * (360 - 231 / 255 * 360) / 60
    assert out[0, 0, 2] == 255 and out[0, 0, 1] <= 2
    assert abs(int(out[0, 0, 0]) - b_want) <= 1.5, (out[0, 0], b_want)


def test_mmcv_still_fails_on_negative_shifts():
    # The reason for the class: if mmcv is fixed, this test says so and
    # the configs can go back to ColorJitter.
    with pytest.raises(OverflowError):
        mmcv.adjust_hue(_image(2), -0.1, backend='cv2')


def test_same_draws_as_colorjitter_without_hue():
    from mmpretrain.datasets.transforms import ColorJitter

    kwargs = dict(brightness=0.4, contrast=0.4, saturation=0.4)
    for seed in range(5):
        np.random.seed(seed)
        ours = HueSafeColorJitter(**kwargs)(dict(img=_image(seed)))['img']
        np.random.seed(seed)
        theirs = ColorJitter(**kwargs)(dict(img=_image(seed)))['img']
        np.testing.assert_array_equal(ours, theirs)


def test_hue_jitter_runs_for_negative_draws():
    jitter = HueSafeColorJitter(hue=0.4)
    changed = 0
    for seed in range(10):
        np.random.seed(seed)
        img = _image(seed)
        out = jitter(dict(img=img.copy()))['img']
        assert out.shape == img.shape and out.dtype == np.uint8
        changed += int(not np.array_equal(out, img))
    assert changed >= 8


@pytest.mark.parametrize(
    'config',
    [
        'configs/simclr/simclr_resnet50_16xb256-coslr-200e_in1k.py',
        'configs/mocov2/mocov2_resnet50_8xb32-coslr-200e_in1k.py',
        'configs/mocov3/mocov3_vit-base-p16_16xb256-amp-coslr-300e_in1k.py',
        'configs/mocov3/mocov3_resnet50_8xb512-amp-coslr-100e_in1k.py',
        'configs/byol/byol_resnet50_16xb256-coslr-200e_in1k.py',
        'configs/barlowtwins/barlowtwins_resnet50_8xb256-coslr-300e_in1k.py',
        'configs/densecl/densecl_resnet50_8xb32-coslr-200e_in1k.py',
        'configs/simsiam/simsiam_resnet50_8xb32-coslr-100e_in1k.py',
        'configs/swav/swav_resnet50_8xb32-mcrop-coslr-200e_in1k-224px-96px.py',
    ],
)
def test_custom_recipes_run_their_pipeline(config, tmp_path):
    # Before the fix each of these stopped at the first image with
    # "OverflowError: Python integer -42 out of bounds for uint8".
    import cv2

    register_all_modules()
    init_default_scope('mmssl')
    cfg = load_config(osp.join(ROOT, config))
    steps = cfg.train_dataloader.dataset.pipeline
    pipeline = Compose([TRANSFORMS.build(step) for step in steps])
    for seed in range(6):
        path = str(tmp_path / f'{seed}.png')
        cv2.imwrite(path, _image(seed, 64))
        np.random.seed(seed)
        out = pipeline(dict(img_path=path))
        assert out['inputs'], config
