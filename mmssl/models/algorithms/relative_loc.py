"""Relative Location / context prediction (Doersch et al., ICCV 2015)."""

import torch
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample

from mmssl.registry import MODELS


@MODELS.register_module()
class RelativeLoc(BaseSelfSupervisor):
    """Predict where a neighbour patch lies relative to the centre patch.

    "Unsupervised Visual Representation Learning by Context Prediction",
    https://arxiv.org/abs/1505.05192. The pipeline
    (:class:`mmssl.datasets.transforms.RelativeLocPatches`) cuts each image
    into a 3x3 grid of jittered patches; the algorithm pairs the centre with
    each of the 8 neighbours and an 8-way classifier predicts the position
    (0..7, row-major, skipping the centre).

    ``inputs`` is the list of 9 patch batches, each (B, C, p, p), in
    row-major grid order (the centre is ``inputs[4]``).
    """

    def loss(
        self,
        inputs: list[torch.Tensor],
        data_samples: list[DataSample],
        **kwargs,
    ) -> dict:
        if len(inputs) != 9:
            raise ValueError(
                f'RelativeLoc expects 9 patches per image, got {len(inputs)};'
                ' put RelativeLocPatches in the train pipeline.'
            )
        batch = inputs[0].shape[0]
        feats = self.backbone(torch.cat(inputs))  # 9B patches at once
        feats = feats[-1] if isinstance(feats, (list, tuple)) else feats
        feats = feats.view(9, batch, *feats.shape[1:])
        center = feats[4]
        neighbours = torch.cat([feats[i] for i in range(9) if i != 4])
        center = center.repeat(8, *([1] * (center.dim() - 1)))  # (8B, ...)
        pair = self.neck(center, neighbours)  # (8B, C)
        labels = torch.arange(8, device=pair.device).repeat_interleave(batch)
        return dict(loss=self.head.loss(pair, labels))
