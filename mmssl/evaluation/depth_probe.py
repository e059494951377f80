"""Frozen linear depth probe (DINOv2 "lin. 1", DINOv3 bins).

Oquab et al. 2023 (DINOv2, https://arxiv.org/abs/2304.07193, Sec. 7.4):
a linear layer on the patch tokens of the frozen backbone with the CLS
token concatenated to each; depth predicted as a classification over 256
bins uniformly spaced between ``min_depth`` and ``max_depth`` whose
softmax-weighted centres give the depth (Bhat et al. 2021, AdaBins
https://arxiv.org/abs/2011.14141, as DINOv2/v3 use it), or regressed
directly (``max_depth * sigmoid``). The depth is decoded on the patch
grid and upsampled bilinearly to the label size (256 bin logits at full
resolution would cost 256 times the memory for the same expectation up
to the interpolation). Trained with the scale-invariant log
loss of Eigen et al. 2014 (https://arxiv.org/abs/1406.2283, lambda 0.85
as BTS); measured by RMSE, AbsRel and delta1 (see
:mod:`mmssl.evaluation.dense_metrics`).
"""

from dataclasses import replace
from typing import Dict, List

import numpy as np
import torch
import torch.nn.functional as F

from mmssl.engine.runner.progress import progress

from .dense_data import read_depth, read_image
from .dense_metrics import (
    depth_image_metrics,
    mean_metrics,
    valid_mean_depth,
)
from .dense_probe import (
    Featurizer,
    LinearHead,
    ProbeSettings,
    cache_features,
    head_input,
    slide_logits,
    sweep_lr,
    train_head,
    train_view,
)

DEPTH_MODES = ('bins', 'regression')


def bin_centres(n_bins: int, min_depth: float, max_depth: float):
    """Centres of ``n_bins`` equal bins over [min_depth, max_depth]."""
    edges = torch.linspace(min_depth, max_depth, n_bins + 1)
    return (edges[:-1] + edges[1:]) / 2


def decode_depth(logits: torch.Tensor, mode: str, max_depth: float, centres):
    """(B, K, H, W) logits -> (B, H, W) depth in metres."""
    if mode == 'bins':
        prob = logits.softmax(1)
        return torch.einsum('bkhw,k->bhw', prob, centres)
    return max_depth * torch.sigmoid(logits[:, 0])


def silog_loss(
    pred: torch.Tensor,
    gt: torch.Tensor,
    min_depth: float,
    max_depth: float,
    lam: float = 0.85,
) -> torch.Tensor:
    """Scale-invariant log loss over valid pixels (Eigen et al. 2014)."""
    valid = (gt > min_depth) & (gt <= max_depth)
    g = torch.log(pred[valid].clamp(min=min_depth)) - torch.log(gt[valid])
    if g.numel() == 0:
        return pred.sum() * 0.0
    return torch.sqrt((g**2).mean() - lam * g.mean() ** 2 + 1e-8)


def run_depth_probe(
    featurizer: Featurizer,
    train_pairs: List,
    val_pairs: List,
    settings: ProbeSettings,
    mode: str = 'bins',
    n_bins: int = 256,
    min_depth: float = 1e-3,
    max_depth: float = 10.0,
    with_cls: bool = True,
    keep: int = 6,
) -> Dict:
    """Train on ``train_pairs``, measure on ``val_pairs``.

    Returns:
        dict: ``metrics`` (rmse, abs_rel, delta1; ``floor_*`` the same of
        predicting the training set's mean depth, ``floor_depth``,
        everywhere), ``lr`` (the head's
        learning rate), ``sweep`` (minus the held-out RMSE of each swept
        learning rate, empty without a sweep), ``losses``, ``samples``
        (``(image, gt depth, predicted depth)``).
    """
    if mode not in DEPTH_MODES:
        raise ValueError(f'depth mode {mode!r}; one of {DEPTH_MODES}')
    torch.manual_seed(settings.seed)
    images, depths = [], []
    for image_path, depth_path in progress(
        train_pairs, desc='reading', leave=False
    ):
        image = read_image(image_path)
        depth = read_depth(depth_path, image.shape)
        image, depth = train_view(image, depth, settings.crop)
        images.append(image)
        depths.append(torch.from_numpy(np.ascontiguousarray(depth)))
    maps, cls = cache_features(featurizer, images, settings.batch_size)
    inputs = head_input(maps, cls, with_cls).half()
    out_channels = n_bins if mode == 'bins' else 1
    centres = bin_centres(n_bins, min_depth, max_depth)

    def predict(logits: torch.Tensor, size) -> torch.Tensor:
        # decoded on the patch grid, then upsampled: (B, 1, h, w) -> (B, H, W)
        depth = decode_depth(logits, mode, max_depth, centres)[:, None]
        return F.interpolate(
            depth, size=size, mode='bilinear', align_corners=False
        )[:, 0]

    def loss_fn(logits, gt):
        return silog_loss(
            predict(logits, gt.shape[-2:]), gt, min_depth, max_depth
        )

    def make_head():
        return LinearHead(inputs.shape[1], out_channels)

    def score(head, x, gt):  # minus the mean RMSE of the held-out crops
        pred = predict(head(x.float()), gt.shape[-2:])
        per = [depth_image_metrics(p, g, min_depth, max_depth)
               for p, g in zip(pred, gt)]  # fmt: skip
        per = [m['rmse'] for m in per if m is not None]
        return -sum(per) / len(per) if per else -float('inf')

    targets = torch.stack(depths)
    lr, sweep = sweep_lr(make_head, inputs, targets, loss_fn, score, settings)
    torch.manual_seed(settings.seed)
    head = make_head()
    losses = train_head(
        head,
        inputs,
        targets,
        loss_fn,
        replace(settings, lr=lr),
        'depth probe',
    )
    per_image, floor, samples = [], [], []
    mean_depth = valid_mean_depth(targets, min_depth, max_depth)
    for image_path, depth_path in progress(
        val_pairs, desc='depth eval', leave=False
    ):
        image = read_image(image_path)
        gt = torch.from_numpy(read_depth(depth_path, image.shape))
        pred = slide_logits(
            featurizer,
            lambda m, c: decode_depth(
                head(head_input(m, c, with_cls)), mode, max_depth, centres
            )[:, None],
            image,
            settings.crop,
            gt.shape,
        )[0]
        per_image.append(depth_image_metrics(pred, gt, min_depth, max_depth))
        flat = torch.full_like(gt, mean_depth, dtype=torch.float32)
        floor.append(depth_image_metrics(flat, gt, min_depth, max_depth))
        if len(samples) < keep:
            samples.append((image, gt.numpy(), pred.numpy()))
    metrics = mean_metrics(per_image)
    metrics.update(
        {f'floor_{k}': v for k, v in mean_metrics(floor).items()},
        floor_depth=mean_depth,
    )
    return dict(
        metrics=metrics,
        lr=lr,
        sweep=sweep,
        losses=losses,
        samples=samples,
    )
