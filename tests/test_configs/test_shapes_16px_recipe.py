"""The SimCLR / MoCo v2 / BYOL shapes demos train and evaluate at 16 px.

On data/shapes the 64 px SimCLR recipe did not learn shape in its 10
epochs (kNN at its random init); the 16 px recipe of
configs/_base_/datasets/shapes_16px_views.py does in 30 (README.md).
"""

import os.path as osp

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import Compose

from mmssl.registry import TRANSFORMS
from mmssl.setup_env import register_all_modules
from tests.support.tools import load_dev_script

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMOS = {  # digits demo -> its shapes sibling
    'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py': (
        'configs/simclr/simclr_resnet18-w16_1xb64-30e_shapes_demo.py'
    ),
    'configs/byol/byol_resnet18-w16_1xb64-4e_demo.py': (
        'configs/byol/byol_resnet18-w16_1xb64-30e_shapes_demo.py'
    ),
    'configs/mocov2/mocov2_resnet18-w16_1xb64-4e_demo.py': (
        'configs/mocov2/mocov2_resnet18-w16_1xb64-30e_shapes_demo.py'
    ),
}


def _run(steps, path: str) -> dict:
    register_all_modules()
    return Compose([TRANSFORMS.build(s) for s in steps])(dict(img_path=path))


@pytest.mark.parametrize('shapes_demo', sorted(DEMOS.values()))
def test_views_and_knn_images_are_16px_and_the_knn_sees_everything(
    shapes_demo, tmp_path
):
    cfg = Config.fromfile(osp.join(ROOT, shapes_demo))
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    path = str(tmp_path / 'a.png')
    cv2.imwrite(path, img)
    views = _run(cfg.train_pipeline, path)['inputs']
    assert [tuple(v.shape) for v in views] == [(3, 16, 16)] * 2
    assert not torch.equal(views[0], views[1])
    for split in ('bank', 'query'):
        steps = cfg.test_dataloader.dataset[split].pipeline
        seen = _run(steps, path)['inputs']
        # the whole image, area-averaged: what the views are cut from
        small = cv2.resize(img, (16, 16), interpolation=cv2.INTER_AREA)
        assert torch.equal(seen, torch.from_numpy(small).permute(2, 0, 1))
    assert cfg.train_cfg.max_epochs == 30
    assert cfg.train_dataloader.dataset.data_root == 'data/shapes/train'


@pytest.mark.parametrize('digits_demo', sorted(DEMOS))
def test_zoo_report_trains_the_16px_recipe_for_the_shapes_row(digits_demo):
    zoo_report = load_dev_script('zoo_report.py')

    assert zoo_report.resolve(digits_demo, 'shapes') == {
        'config': DEMOS[digits_demo],
        'options': [],
    }
