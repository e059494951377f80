"""Every figure of tools/eval.py beside the floor of its data and, with
--baseline, the random init of the same config in the same run."""

import glob
import os.path as osp

import cv2
import numpy as np
import pytest
import torch

from mmssl.evaluation.dense_figure import HEADER_HEIGHT
from tests.support.dense_fixtures import write_ade, write_depth_folder
from tests.support.tools import ROOT, load_tool

DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')
FAST = ['--crop', '16', '--probe-iters', '5', '--batch-size', '4']


def _masks(root, split):
    paths = sorted(glob.glob(osp.join(root, 'annotations', split, '*.png')))
    return [cv2.imread(p, cv2.IMREAD_UNCHANGED).astype(int) - 1 for p in paths]


def _seg_floor(root):
    """Predict the training set's most frequent class everywhere; the
    mIoU over the classes present (ADE20K: label 0 is unlabeled)."""
    train = np.concatenate([m.ravel() for m in _masks(root, 'training')])
    majority = np.bincount(train[train >= 0]).argmax()
    val = np.concatenate([m.ravel() for m in _masks(root, 'validation')])
    val = val[val >= 0]
    classes = set(val.tolist()) | {majority}
    ious = [(val == c).mean() if c == majority else 0.0 for c in classes]
    return 100 * float(np.mean(ious))


@pytest.fixture(scope='module')
def ckpt(tmp_path_factory):
    from mmssl.config import load_config
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(3)
    model = MODELS.build(load_config(DEMO).model)
    state = {
        f'teacher.backbone.{k}': v
        for k, v in model.backbone.state_dict().items()
    }
    path = str(tmp_path_factory.mktemp('ckpt') / 'w.pth')
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), path)
    return path


def test_seg_floor_baseline_and_titled_picture(tmp_path, ckpt, capsys):
    data = write_ade(tmp_path / 'ade')
    (tmp_path / 'ade' / 'classes.txt').write_text('left\nright\n')
    work = tmp_path / 'work'
    metrics = load_tool('eval.py').main(
        [DEMO, '--task', 'seg', '--data', data, '--work-dir', str(work),
         '--checkpoint', ckpt, '--baseline', '--probe-lr', '0.01'] + FAST
    )  # fmt: skip
    assert metrics['seg/floor_mIoU'] == pytest.approx(_seg_floor(data))
    out = capsys.readouterr().out.strip().splitlines()
    value, floor = metrics['seg/mIoU'], metrics['seg/floor_mIoU']
    base = metrics['seg/random_init_mIoU']
    assert out[-3] == (
        'floor of the data (the most frequent class everywhere): mIoU '
        f'{floor:.2f}, seg/mIoU {value - floor:+.2f} from it'
    )
    assert out[-2] == (
        f'random init of the same config: mIoU {base:.2f}, seg/mIoU '
        f'{value - base:+.2f} from it'
    )
    assert any('RANDOM INIT' in line for line in out)
    picture = cv2.imread(str(work / 'eval_seg.png'))
    band = picture[:HEADER_HEIGHT]
    assert picture.shape[0] == HEADER_HEIGHT + 3 * (128 + 2)
    assert band.mean() > 200 and band.min() < 100  # white with text
    gap = picture[HEADER_HEIGHT : HEADER_HEIGHT + 128, 128:134]
    assert (gap == 255).all()  # white between image and ground truth


def test_depth_floor_is_the_mean_training_depth(tmp_path, capsys):
    data = write_depth_folder(tmp_path / 'd')
    work = str(tmp_path / 'work')
    metrics = load_tool('eval.py').main(
        [DEMO, '--task', 'depth', '--data', data, '--work-dir', work,
         '--features', 'pixels', '--probe-lr', '0.05', '--n-bins', '32']
        + FAST
    )  # fmt: skip

    def depths(split):
        paths = sorted(glob.glob(osp.join(data, 'depth', split, '*.png')))
        return [cv2.imread(p, cv2.IMREAD_UNCHANGED) / 1000.0 for p in paths]

    train = np.concatenate([d.ravel() for d in depths('training')])
    mean = train[train > 1e-3].mean()
    rmses = [
        np.sqrt(((d[d > 1e-3] - mean) ** 2).mean())
        for d in depths('validation')
    ]
    assert metrics['depth/floor_depth'] == pytest.approx(mean, rel=1e-5)
    assert metrics['depth/floor_rmse'] == pytest.approx(np.mean(rmses))
    out = capsys.readouterr().out
    assert 'floor of the data (the mean training depth everywhere): rmse ' in (
        out
    )


def test_probe_crop_follows_images_smaller_than_the_backbone(tmp_path, capsys):
    from mmssl.config import load_config
    from mmssl.evaluation.tasks.evaluate import default_crop

    cfg = load_config(DEMO)  # ViT img_size 32, patch 4
    small = tmp_path / 'small.png'
    cv2.imwrite(str(small), np.zeros((19, 40, 3), np.uint8))
    big = tmp_path / 'big.png'
    cv2.imwrite(str(big), np.zeros((64, 64, 3), np.uint8))
    assert default_crop(cfg, [(str(big), None)]) == (
        32, "the backbone's img_size"
    )  # fmt: skip
    crop, source = default_crop(cfg, [(str(small), None), (str(big), None)])
    assert (crop, source) == (16, "the images' short side; the backbone's "
                              'is 32')  # fmt: skip
    data = write_ade(tmp_path / 'ade', 2, 1)
    argv = [DEMO, '--task', 'seg', '--data', data, '--num-classes', '2']
    argv += ['--work-dir', str(tmp_path / 'w'), '--probe-iters', '2']
    load_tool('eval.py').main(argv + ['--probe-lr', '0.01'])
    assert "crop 16 (the images' short side; the backbone's is 32)" in (
        capsys.readouterr().out
    )
