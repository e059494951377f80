"""KoLeo regulariser (Kozachenko-Leonenko differential entropy estimator)."""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmssl.models.utils.precision import at_least_fp32
from mmssl.registry import MODELS


@MODELS.register_module()
class KoLeoLoss(nn.Module):
    """KoLeo loss (Sablayrolles et al. 2019, https://arxiv.org/abs/1806.03198)
    as used by DINOv2 on the student CLS tokens of each global crop.

    The features are L2-normalised, each sample's nearest other sample (max
    inner product) is found, and the loss is
    ``-mean_i log(||x_i - x_nn(i)|| + eps)``: it pushes features of a batch
    apart, spreading them uniformly.

    Batch-size 1: a single sample has no neighbour and the estimator is
    undefined (the reference code returns ``inf``/``nan``). Here the loss is
    then defined as 0 (still attached to the graph, so it is safe under DDP).
    The loss only uses this rank's batch (as DINOv2 does).

    Args:
        eps (float): Added inside the log and to the distance. Defaults to
            1e-8 (DINOv2).
    """

    def __init__(self, eps: float = 1e-8) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, features: Tensor) -> Tensor:
        """Args:
            features (Tensor): (B, C) features (not necessarily normalised).

        Returns:
            Tensor: Scalar loss; 0 when B < 2.
        """
        if features.dim() != 2:
            raise ValueError(
                'KoLeoLoss expects (B, C) features, got '
                f'{tuple(features.shape)}.'
            )
        if features.shape[0] < 2:
            return features.sum() * 0.0
        x = F.normalize(at_least_fp32(features), p=2, dim=-1, eps=self.eps)
        with torch.no_grad():
            dots = x @ x.t()  # (B, B)
            dots.fill_diagonal_(-2.0)  # never pick oneself (dots >= -1)
            nn_idx = dots.argmax(dim=1)  # (B,)
        dist = F.pairwise_distance(x, x[nn_idx], p=2, eps=self.eps)
        return -torch.log(dist + self.eps).mean()
