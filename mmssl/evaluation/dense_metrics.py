"""Metrics of the dense probes: mIoU, and RMSE / AbsRel / delta1.

Segmentation follows mmsegmentation's ``IoUMetric``: one confusion matrix
over every pixel of the split, IoU = TP / (TP + FP + FN) per class, mIoU
the mean over the classes that occur in the ground truth or the
prediction (a class absent from both has no IoU), all in percent.

Depth follows Eigen et al. 2014 (https://arxiv.org/abs/1406.2283) as
DINOv2 reports it: over the valid pixels of an image (``min_depth < gt <=
max_depth``), RMSE = sqrt(mean((p - g)^2)), AbsRel = mean(|p - g| / g),
delta1 = share of pixels with max(p / g, g / p) < 1.25; each averaged over
the images.
"""

from typing import Dict

import torch

from .dense_data import IGNORE_INDEX


def confusion_matrix(
    pred: torch.Tensor, label: torch.Tensor, num_classes: int
) -> torch.Tensor:
    """(K, K) counts, rows = ground truth, columns = prediction.

    Pixels whose label is ``IGNORE_INDEX`` are left out.
    """
    keep = label != IGNORE_INDEX
    idx = label[keep].long() * num_classes + pred[keep].long()
    counts = torch.bincount(idx, minlength=num_classes * num_classes)
    return counts.reshape(num_classes, num_classes)


def segmentation_metrics(conf: torch.Tensor) -> Dict[str, float]:
    """``mIoU``, ``aAcc``, ``mAcc`` (percent) and per-class IoU."""
    conf = conf.double()
    tp = conf.diag()
    gt = conf.sum(1)
    pred = conf.sum(0)
    union = gt + pred - tp
    iou = tp / union  # nan where the class occurs nowhere
    acc = tp / gt
    out = {
        'mIoU': float(iou[union > 0].mean() * 100),
        'aAcc': float(tp.sum() / conf.sum().clamp(min=1) * 100),
        'mAcc': float(acc[gt > 0].mean() * 100),
    }
    for k, value in enumerate(iou.tolist()):
        out[f'IoU.{k}'] = value * 100
    return out


def depth_image_metrics(
    pred: torch.Tensor,
    gt: torch.Tensor,
    min_depth: float = 1e-3,
    max_depth: float = 10.0,
) -> Dict[str, float] | None:
    """RMSE, AbsRel, delta1 of one image (None: no valid pixel)."""
    valid = (gt > min_depth) & (gt <= max_depth)
    if not valid.any():
        return None
    p = pred[valid].double().clamp(min_depth, max_depth)
    g = gt[valid].double()
    ratio = torch.maximum(p / g, g / p)
    return {
        'rmse': float(((p - g) ** 2).mean().sqrt()),
        'abs_rel': float(((p - g).abs() / g).mean()),
        'delta1': float((ratio < 1.25).double().mean()),
    }


def mean_metrics(per_image: list) -> Dict[str, float]:
    """Mean of each key over the images that have it."""
    per_image = [m for m in per_image if m is not None]
    if not per_image:
        raise ValueError(
            'no validation image has a valid depth pixel; check the '
            'depth maps (16-bit PNG in millimetres) and --max-depth.'
        )
    return {
        k: sum(m[k] for m in per_image) / len(per_image) for k in per_image[0]
    }


def majority_class(labels: torch.Tensor, num_classes: int) -> int:
    """The most frequent class of ``labels`` (ignored pixels left out)."""
    valid = labels[(labels >= 0) & (labels < num_classes)].long()
    return int(torch.bincount(valid, minlength=num_classes).argmax())


def constant_prediction_conf(conf: torch.Tensor, cls: int) -> torch.Tensor:
    """The confusion matrix (rows: truth, columns: prediction) of
    predicting ``cls`` on every pixel that ``conf`` counts."""
    floor = torch.zeros_like(conf)
    floor[:, cls] = conf.sum(1)
    return floor


def valid_mean_depth(
    depths: torch.Tensor, min_depth: float = 1e-3, max_depth: float = 10.0
) -> float:
    """Mean of the valid pixels of training depth maps: the floor
    predicts it everywhere."""
    valid = (depths > min_depth) & (depths <= max_depth)
    return float(depths[valid].double().mean()) if valid.any() else 0.0
