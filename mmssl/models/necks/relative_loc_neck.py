"""Neck of Relative Location: fuse a centre and a neighbour patch."""

import torch
from mmengine.model import BaseModule
from torch import nn

from mmssl.registry import MODELS


@MODELS.register_module()
class RelativeLocNeck(BaseModule):
    """Concatenate pooled centre and neighbour features, then fc-BN-ReLU.

    Doersch et al., "Unsupervised Visual Representation Learning by Context
    Prediction", ICCV 2015, https://arxiv.org/abs/1505.05192.

    Args:
        in_channels (int): Channels of one patch's backbone features.
        out_channels (int): Channels of the fused pair feature.
        dropout (float): Dropout after the ReLU. Defaults to 0.5.
    """

    def __init__(
        self, in_channels: int, out_channels: int, dropout: float = 0.5
    ) -> None:
        super().__init__()
        self.fc = nn.Linear(in_channels * 2, out_channels)
        self.bn = nn.BatchNorm1d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(dropout)

    def forward(
        self, center: torch.Tensor, neighbour: torch.Tensor
    ) -> torch.Tensor:
        """(B, C[, H, W]) centre and neighbour features -> (B, out)."""
        if center.dim() == 4:
            center = center.mean(dim=(2, 3))
            neighbour = neighbour.mean(dim=(2, 3))
        x = torch.cat([center, neighbour], dim=1)  # (B, 2C)
        return self.drop(self.relu(self.bn(self.fc(x))))
