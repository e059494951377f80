"""Linear classifier on pooled features for pretext tasks."""

from typing import Optional

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from torch import nn

from mmssl.registry import MODELS


@MODELS.register_module()
class PretextClsHead(BaseModule):
    """A linear layer trained with cross-entropy on pretext labels.

    Shared by Rotation Prediction (4 rotations), Relative Location (8
    neighbour positions), DeepCluster and ODC (cluster pseudo-labels).

    Args:
        in_channels (int): Feature channels.
        num_classes (int): Number of pretext classes.
        with_avg_pool (bool): Global-average-pool (B, C, H, W) inputs
            first. Defaults to False.
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
        init_std (float): Std of the normal weight init. Defaults to 0.01.
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        with_avg_pool: bool = False,
        loss_weight: float = 1.0,
        init_std: float = 0.01,
    ) -> None:
        super().__init__()
        self.with_avg_pool = with_avg_pool
        self.loss_weight = loss_weight
        self.init_std = init_std
        self.fc = nn.Linear(in_channels, num_classes)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new classifier weights (DeepCluster re-inits every epoch)."""
        nn.init.normal_(self.fc.weight, std=self.init_std)
        nn.init.zeros_(self.fc.bias)

    def init_weights(self) -> None:
        self.reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # MMSelfSup 1.x's ClsHead named the layer fc_cls (its Rotation
        # Prediction and Relative Location checkpoints): same tensors
        for name in ('weight', 'bias'):
            old, new = f'{prefix}fc_cls.{name}', f'{prefix}fc.{name}'
            if old in state_dict and new not in state_dict:
                state_dict[new] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """Logits (B, num_classes) from (B, C) or (B, C, H, W) features."""
        if isinstance(feats, (list, tuple)):
            feats = feats[-1]
        if self.with_avg_pool:
            feats = feats.mean(dim=(2, 3)) if feats.dim() == 4 else feats
        return self.fc(feats.flatten(1))

    def loss(
        self,
        feats: torch.Tensor,
        labels: torch.Tensor,
        class_weight: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """Cross-entropy of the logits of ``feats`` against ``labels``.

        Args:
            feats (Tensor): (B, C) or (B, C, H, W) features.
            labels (Tensor): (B, ) class indices.
            class_weight (Tensor, optional): (num_classes, ) weights; the
                mean is then weighted as in ``torch.nn.CrossEntropyLoss``.
        """
        logits = self(feats)
        return self.loss_weight * F.cross_entropy(
            logits, labels, weight=class_weight
        )
