"""Rotation Prediction (Gidaris et al., ICLR 2018)."""

import torch
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS


def rotate_batch(img: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch rotated by 0, 90, 180 and 270 degrees, with labels.

    Args:
        img (Tensor): (B, C, H, W) square images.

    Returns:
        tuple: images (4B, C, H, W), rotation ``k`` first (all images at
        0 degrees, then all at 90, ...), and labels (4B, ) in {0, 1, 2, 3}.
    """
    if img.shape[-1] != img.shape[-2]:
        raise ValueError(
            'Rotation prediction needs square images, got '
            f'{tuple(img.shape[-2:])}; crop them square.'
        )
    rotated = torch.cat([torch.rot90(img, k, dims=(2, 3)) for k in range(4)])
    labels = torch.arange(4, device=img.device).repeat_interleave(img.shape[0])
    return rotated, labels


@MODELS.register_module()
class RotationPred(BaseSelfSupervisor):
    """Predict which of four rotations was applied to an image.

    "Unsupervised Representation Learning by Predicting Image Rotations",
    https://arxiv.org/abs/1803.07728. Every image of the batch is shown at
    0, 90, 180 and 270 degrees and a 4-way classifier
    (:class:`PretextClsHead`) predicts the rotation.
    """

    def loss(
        self,
        inputs: list[torch.Tensor],
        data_samples: list[DataSample],
        **kwargs,
    ) -> dict:
        img = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        rotated, labels = rotate_batch(img)  # (4B, C, H, W), (4B, )
        feats = self.backbone(rotated)
        if self.with_neck:
            feats = self.neck(feats)
        return dict(loss=self.head.loss(feats, labels))
