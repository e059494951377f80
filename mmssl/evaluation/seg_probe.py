"""Frozen linear segmentation probe (the DINOv2 / DINOv3 protocol).

Oquab et al. 2023 (DINOv2, https://arxiv.org/abs/2304.07193, Sec. 7.4)
and Simeoni et al. 2025 (DINOv3, https://arxiv.org/abs/2508.10104): the
backbone is frozen; a linear layer (BatchNorm + 1x1 convolution) on the
patch tokens of the last layer (or the last four concatenated) predicts
the class of each patch; the logits are upsampled bilinearly to the label
size and trained with cross-entropy, unlabeled pixels ignored; images
larger than the crop are read with sliding windows; the figure is the
mIoU over the classes. Features are computed once per training image
(no augmentation), so the probe is a few minutes on a CPU for a small set.
"""

from dataclasses import replace
from typing import Dict, List

import numpy as np
import torch
import torch.nn.functional as F

from mmssl.engine.runner.progress import progress

from .dense_data import IGNORE_INDEX, read_image, read_mask
from .dense_metrics import (
    confusion_matrix,
    constant_prediction_conf,
    majority_class,
    segmentation_metrics,
)
from .dense_probe import (
    Featurizer,
    LinearHead,
    ProbeSettings,
    cache_features,
    slide_logits,
    sweep_lr,
    train_head,
    train_view,
)


def seg_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of (B, K, h, w) logits upsampled to (B, H, W) labels."""
    logits = F.interpolate(
        logits, size=labels.shape[-2:], mode='bilinear', align_corners=False
    )
    return F.cross_entropy(logits, labels.long(), ignore_index=IGNORE_INDEX)


def seg_score(num_classes: int):
    """``score(head, maps, labels)``: the mIoU of a head on cached crops
    (the sweep's held-out score)."""

    def score(head, maps, labels):
        logits = F.interpolate(
            head(maps.float()),
            size=labels.shape[-2:],
            mode='bilinear',
            align_corners=False,
        )
        conf = confusion_matrix(logits.argmax(1), labels, num_classes)
        return segmentation_metrics(conf)['mIoU']

    return score


def load_train_set(pairs, crop, num_classes, reduce_zero_label):
    """Training views: images (list of uint8) and labels (N, crop, crop)."""
    images, labels = [], []
    for image_path, mask_path in progress(pairs, desc='reading', leave=False):
        image = read_image(image_path)
        mask = read_mask(
            mask_path, image.shape, num_classes, reduce_zero_label
        )
        image, mask = train_view(image, mask.astype(np.uint8), crop)
        images.append(image)
        labels.append(torch.from_numpy(np.ascontiguousarray(mask)))
    return images, torch.stack(labels)


def run_seg_probe(
    featurizer: Featurizer,
    train_pairs: List,
    val_pairs: List,
    num_classes: int,
    reduce_zero_label: bool,
    settings: ProbeSettings,
    keep: int = 6,
) -> Dict:
    """Train the probe on ``train_pairs``, measure it on ``val_pairs``.

    Returns:
        dict: ``metrics`` (mIoU, aAcc, mAcc, IoU.k in percent; the
        floor: ``floor_mIoU``/``floor_mAcc`` of predicting the training
        set's most frequent class, ``floor_class``, everywhere), ``lr``
        (the head's learning rate), ``sweep`` (the held-out mIoU of each
        swept learning rate, empty without a sweep), ``losses`` (per
        step), ``samples`` (the first ``keep`` validation ``(image,
        label, prediction)``, for the figure).
    """
    torch.manual_seed(settings.seed)
    images, labels = load_train_set(
        train_pairs, settings.crop, num_classes, reduce_zero_label
    )
    maps, _ = cache_features(featurizer, images, settings.batch_size)

    def make_head():
        return LinearHead(maps.shape[1], num_classes)

    lr, sweep = sweep_lr(
        make_head, maps, labels, seg_loss, seg_score(num_classes), settings
    )
    torch.manual_seed(settings.seed)
    head = make_head()
    losses = train_head(
        head, maps, labels, seg_loss, replace(settings, lr=lr), 'seg probe'
    )
    conf = torch.zeros(num_classes, num_classes, dtype=torch.long)
    samples = []
    for image_path, mask_path in progress(
        val_pairs, desc='seg eval', leave=False
    ):
        image = read_image(image_path)
        mask = torch.from_numpy(
            read_mask(mask_path, image.shape, num_classes, reduce_zero_label)
        )
        logits = slide_logits(
            featurizer,
            lambda m, c: head(m.float()),
            image,
            settings.crop,
            mask.shape,
        )
        pred = logits.argmax(0)
        conf += confusion_matrix(pred, mask, num_classes)
        if len(samples) < keep:
            samples.append((image, mask.numpy(), pred.numpy()))
    majority = majority_class(labels, num_classes)
    floor = segmentation_metrics(constant_prediction_conf(conf, majority))
    metrics = segmentation_metrics(conf)
    metrics.update(
        floor_mIoU=floor['mIoU'],
        floor_mAcc=floor['mAcc'],
        floor_class=majority,
    )
    return dict(
        metrics=metrics,
        lr=lr,
        sweep=sweep,
        losses=losses,
        samples=samples,
    )
