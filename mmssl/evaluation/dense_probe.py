"""What the segmentation and depth probes share: views, the feature
cache, the linear head, its training loop and sliding-window inference.

Training views (no augmentation): the short side is resized to the crop
size and the centre crop kept, so each training image is one crop whose
features are computed once and cached (float16). Evaluation views keep
the aspect ratio (short side = crop size) and are read with overlapping
crop-sized windows (stride 2/3 of the crop) whose logits are averaged,
then resized bilinearly to the label's size (as mmsegmentation's
``slide`` inference).

The head's learning rate is chosen, as the DINO papers choose a linear
probe's (Oquab et al. 2023, Sec. 7), by a sweep: one head per learning
rate of ``ProbeSettings.lrs`` trains on the training images minus a
held-out fifth, the one with the best held-out score wins and is trained
again on all of them; the validation images are never seen before the
final measure.
"""

import math
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Tuple

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from mmssl.engine.runner.progress import progress

from .dense_features import dense_features, to_tensor


@dataclass
class ProbeSettings:
    """Knobs of a dense probe.

    Attributes:
        crop (int): Side of the training crop and the sliding window.
        n_layers (int): Last blocks concatenated (1 or 4 in DINOv2).
        batch_size (int): Images per step (features and head).
        iters (int): Head training steps.
        lr (float): AdamW learning rate (cosine to 0), used when ``lrs``
            is empty.
        lrs (tuple[float]): Learning rates to sweep (two or more: the
            best on a held-out part of the training images is used);
            empty: ``lr`` alone.
        holdout (float): Share of the training images held out by the
            sweep.
        weight_decay (float): AdamW weight decay.
        seed (int): Seed of the head's init, batch order and held-out
            part.
    """

    crop: int = 64
    n_layers: int = 1
    batch_size: int = 16
    iters: int = 1000
    lr: float = 1e-3
    lrs: Tuple[float, ...] = ()
    holdout: float = 0.2
    weight_decay: float = 1e-4
    seed: int = 0


def resize_short(img: np.ndarray, size: int, nearest: bool = False):
    """Resize so the short side is ``size`` (aspect kept)."""
    h, w = img.shape[:2]
    if min(h, w) == size:
        return img
    s = size / min(h, w)
    new = (max(size, round(w * s)), max(size, round(h * s)))
    mode = cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR
    return cv2.resize(img, new, interpolation=mode)


def center_crop(img: np.ndarray, size: int) -> np.ndarray:
    h, w = img.shape[:2]
    top, left = (h - size) // 2, (w - size) // 2
    return img[top : top + size, left : left + size]


def train_view(image, target, crop: int, nearest_target: bool = True):
    """Short side to ``crop``, centre crop: image and target alike."""
    image = center_crop(resize_short(image, crop), crop)
    target = center_crop(resize_short(target, crop, nearest_target), crop)
    return image, target


class Featurizer:
    """Frozen backbone + normalisation: BGR images -> (maps, cls)."""

    def __init__(self, backbone: nn.Module, mean, std, to_rgb: bool):
        # not ``self.backbone = backbone.eval()``: mmpretrain's
        # BaseBackbone.train() (MAE's ViT...) returns None, not the module
        backbone.eval()
        self.backbone = backbone
        self.mean, self.std, self.to_rgb = mean, std, to_rgb

    @torch.no_grad()
    def __call__(self, images: List[np.ndarray]):
        x = to_tensor(images, self.mean, self.std, self.to_rgb)
        return dense_features(self.backbone, x)


def cache_features(
    featurizer: Featurizer, images: List[np.ndarray], batch_size: int
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """Features of equal-size images, once: (N, C, h, w) and (N, C)."""
    maps, cls = [], []
    for i in progress(
        range(0, len(images), batch_size), desc='features', leave=False
    ):
        m, c = featurizer(images[i : i + batch_size])
        maps.append(m.half())
        if c is not None:
            cls.append(c.half())
    return torch.cat(maps), (torch.cat(cls) if cls else None)


def head_input(
    maps: torch.Tensor, cls: Optional[torch.Tensor], with_cls: bool
) -> torch.Tensor:
    """Maps, with the CLS token broadcast and concatenated (DINOv2's
    depth "lin. 1") when ``with_cls``: (B, C or 2C, h, w)."""
    maps = maps.float()
    if not with_cls or cls is None:
        return maps
    grid = cls.float()[:, :, None, None].expand(-1, -1, *maps.shape[-2:])
    return torch.cat([maps, grid], 1)


class LinearHead(nn.Module):
    """BatchNorm + 1x1 convolution on patch features (DINOv2 linear)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 1)
        nn.init.normal_(self.conv.weight, std=0.01)
        nn.init.zeros_(self.conv.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.bn(x))  # (B, K, h, w)


def train_head(
    head: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: Callable,
    settings: ProbeSettings,
    desc: str = 'probe',
) -> List[float]:
    """Train ``head`` on cached inputs; returns the loss of each step.

    ``loss_fn(logits (B, K, h, w), targets (B, H, W))`` upsamples itself.
    """
    gen = torch.Generator().manual_seed(settings.seed)
    opt = torch.optim.AdamW(
        head.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, settings.iters)
    head.train()
    losses = []
    n = inputs.shape[0]
    bar = progress(range(settings.iters), desc=desc, leave=False)
    for _ in bar:
        idx = torch.randint(
            0, n, (min(settings.batch_size, n),), generator=gen
        )
        loss = loss_fn(head(inputs[idx].float()), targets[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f'{losses[-1]:.3f}', refresh=False)
    head.eval()
    return losses


def sweep_lr(
    make_head: Callable[[], nn.Module],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: Callable,
    score_fn: Callable,
    settings: ProbeSettings,
) -> Tuple[float, Dict[float, float]]:
    """The learning rate of ``settings.lrs`` whose head scores best on a
    held-out part of the training inputs.

    Args:
        make_head: Builds a fresh head (seeded by the caller's settings).
        inputs, targets: All training inputs and targets (cached).
        loss_fn: As :func:`train_head`.
        score_fn: ``score_fn(head, inputs, targets) -> float``, higher is
            better (mIoU; minus the RMSE).
        settings (ProbeSettings): ``lrs``, ``holdout`` and the rest.

    Returns:
        tuple: the chosen learning rate and the held-out score of each.
        With fewer than two learning rates, ``(lr, {})``: nothing swept.
    """
    lrs = tuple(settings.lrs)
    if len(lrs) < 2:
        return (lrs[0] if lrs else settings.lr), {}
    n = inputs.shape[0]
    n_held = math.ceil(n * settings.holdout)
    if not 0 < n_held < n:
        raise ValueError(
            f'the learning-rate sweep holds out {settings.holdout:.0%} of '
            f'the {n} training images, which leaves none to train or to '
            'score: give more training images or one learning rate '
            '(--probe-lr 0.001).'
        )
    order = torch.randperm(
        n, generator=torch.Generator().manual_seed(settings.seed)
    )
    held, fit = order[:n_held], order[n_held:]
    scores = {}
    for lr in lrs:
        torch.manual_seed(settings.seed)
        head = make_head()
        train_head(
            head,
            inputs[fit],
            targets[fit],
            loss_fn,
            replace(settings, lr=lr),
            f'lr {lr:g}',
        )
        with torch.no_grad():
            scores[lr] = float(score_fn(head, inputs[held], targets[held]))

    def key(lr):  # a diverged head (nan) never wins
        return scores[lr] if math.isfinite(scores[lr]) else -math.inf

    return max(lrs, key=key), scores  # the first of a tie


def windows(size: int, crop: int, stride: int) -> List[int]:
    """Window starts covering ``size`` (the last flush with the end)."""
    if size <= crop:
        return [0]
    starts = list(range(0, size - crop, stride))
    return starts + [size - crop]


@torch.no_grad()
def slide_logits(
    featurizer: Featurizer,
    head: Callable,
    image: np.ndarray,
    crop: int,
    out_size: Tuple[int, int],
    stride: Optional[int] = None,
) -> torch.Tensor:
    """Logits (K, H, W) of one image at ``out_size`` (the label's size).

    ``head(maps, cls) -> (B, K, h, w)``. The image is resized (short side
    ``crop``) and read with crop-sized windows, ``stride`` apart (default
    2/3 of the crop); overlapping logits are averaged.
    """
    view = resize_short(image, crop)
    H, W = view.shape[:2]
    stride = stride or max(1, crop * 2 // 3)
    boxes = [
        (t, s)
        for t in windows(H, crop, stride)
        for s in windows(W, crop, stride)
    ]
    total = count = None
    for top, left in boxes:
        win = view[top : top + crop, left : left + crop]
        maps, cls = featurizer([win])
        logits = head(maps, cls)
        logits = F.interpolate(
            logits, size=win.shape[:2], mode='bilinear', align_corners=False
        )[0]
        if total is None:
            total = logits.new_zeros(logits.shape[0], H, W)
            count = logits.new_zeros(1, H, W)
        total[:, top : top + crop, left : left + crop] += logits
        count[:, top : top + crop, left : left + crop] += 1
    logits = (total / count)[None]
    return F.interpolate(
        logits, size=tuple(out_size), mode='bilinear', align_corners=False
    )[0]
