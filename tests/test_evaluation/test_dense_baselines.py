"""The bundled dense set is not solved by colour, raw patches or a random
network: the segmentation probe of the raw-pixel and random-init
baselines stays at the background-only floor (docs/en/evaluation.md)."""

import importlib.util
import os
import os.path as osp

import cv2
import numpy as np
import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(
    ROOT, 'configs/dinov2/dinov2_vit-tiny-p8_1xb64-40e_dense_demo.py'
)


def _tool(rel):
    spec = importlib.util.spec_from_file_location(
        'tool_' + osp.basename(rel)[:-3], osp.join(ROOT, 'tools', rel)
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _floor(root: str, num_classes: int) -> float:
    """mIoU of predicting background everywhere: IoU_bg / K."""
    folder = osp.join(root, 'annotations', 'validation')
    masks = [
        cv2.imread(osp.join(folder, f), 0) for f in sorted(os.listdir(folder))
    ]
    labels = np.concatenate([m.ravel() for m in masks])
    labels = labels[labels > 0]
    return float((labels == 1).mean() * 100 / num_classes)


@pytest.mark.slow
@pytest.mark.parametrize('features', ['pixels', 'backbone'])
def test_baselines_stay_at_the_background_floor(tmp_path, features):
    data = str(tmp_path / 'dense')
    _tool('misc/make_dense_dataset.py').write(data, 160, 40)
    argv = [CONFIG, '--task', 'seg', '--data', data, '--features', features]
    argv += ['--work-dir', str(tmp_path / 'w'), '--probe-iters', '300']
    metrics = _tool('eval.py').main(argv)
    floor = _floor(data, 6)
    assert 12 < floor < 16
    assert metrics['seg/mIoU'] == pytest.approx(floor, abs=1.0)
    assert metrics['seg/mAcc'] == pytest.approx(100 / 6, abs=1.0)
