"""mIoU and depth metrics against values computed by hand."""

import math

import pytest
import torch

from mmssl.evaluation.dense_metrics import (
    confusion_matrix,
    depth_image_metrics,
    mean_metrics,
    segmentation_metrics,
)


def test_miou_by_hand():
    label = torch.tensor([[0, 0, 1], [1, 2, 255]])
    pred = torch.tensor([[0, 1, 1], [1, 2, 0]])  # the 255 pixel is ignored
    conf = confusion_matrix(pred, label, 4)  # class 3 occurs nowhere
    assert conf.tolist() == [
        [1, 1, 0, 0],
        [0, 2, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 0],
    ]
    m = segmentation_metrics(conf)
    # IoU: 1 / (2 + 1 - 1), 2 / (2 + 3 - 2), 1 / 1; class 3 has none
    assert m['mIoU'] == pytest.approx((1 / 2 + 2 / 3 + 1) / 3 * 100)
    assert m['aAcc'] == pytest.approx(80.0)
    assert m['mAcc'] == pytest.approx((1 / 2 + 1 + 1) / 3 * 100)
    assert m['IoU.1'] == pytest.approx(200 / 3)
    assert math.isnan(m['IoU.3'])


def test_miou_counts_a_class_only_predicted():
    label = torch.tensor([0, 0])
    pred = torch.tensor([0, 1])
    m = segmentation_metrics(confusion_matrix(pred, label, 2))
    assert m['mIoU'] == pytest.approx((50 + 0) / 2)  # class 1: FP only


def test_depth_metrics_by_hand():
    gt = torch.tensor([[1.0, 2.0], [4.0, 0.0]])  # 0: no measurement
    pred = torch.tensor([[1.5, 2.0], [3.0, 7.0]])
    m = depth_image_metrics(pred, gt, max_depth=10)
    assert m['rmse'] == pytest.approx(math.sqrt((0.25 + 0 + 1) / 3))
    assert m['abs_rel'] == pytest.approx((0.5 + 0 + 0.25) / 3)
    assert m['delta1'] == pytest.approx(1 / 3)  # ratios 1.5, 1, 4/3
    perfect = depth_image_metrics(torch.full((2,), 2.0), torch.full((2,), 2.0))
    mean = mean_metrics([m, perfect, None])  # per image, then the mean
    assert mean['rmse'] == pytest.approx(m['rmse'] / 2)
    assert mean['delta1'] == pytest.approx((1 / 3 + 1) / 2)


def test_depth_metrics_ignore_beyond_max_depth():
    gt = torch.tensor([2.0, 20.0])
    m = depth_image_metrics(torch.tensor([2.0, 1.0]), gt, max_depth=10)
    assert m['rmse'] == 0.0
    assert depth_image_metrics(gt * 0, gt * 0) is None
    with pytest.raises(ValueError, match='no validation image'):
        mean_metrics([None])
