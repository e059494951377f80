"""NT-Xent, the normalized-temperature cross-entropy of SimCLR."""

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmpretrain.models.selfsup.simclr import GatherLayer

from mmssl.registry import MODELS


def nt_xent_loss(z: torch.Tensor, temperature: float) -> torch.Tensor:
    """NT-Xent over interleaved pairs (Chen et al., 2020, eq. 1).

    Rows ``2k`` and ``2k + 1`` of ``z`` are the two views of one sample;
    each row's positive is its partner and its negatives are the other
    ``2N - 2`` rows. Cosine similarities are divided by ``temperature``.

    Args:
        z (torch.Tensor): Embeddings (2N, C), pairs interleaved.
        temperature (float): Softmax temperature.

    Returns:
        torch.Tensor: The mean loss over the 2N rows.
    """
    if z.dim() != 2 or z.shape[0] % 2 or z.shape[0] < 4:
        raise ValueError(
            'nt_xent_loss needs (2N, C) embeddings with N >= 2 pairs, got '
            f'{tuple(z.shape)}.'
        )
    z = F.normalize(z, dim=1)
    logits = z @ z.t() / temperature  # (2N, 2N)
    self_mask = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_mask, float('-inf'))
    partner = torch.arange(z.shape[0], device=z.device) ^ 1
    return F.cross_entropy(logits, partner)


@MODELS.register_module()
class NTXentLoss(BaseModule):
    """:func:`nt_xent_loss` over the pairs of every rank.

    The embeddings of all ranks are gathered (with gradients) first, so
    each sample has ``2 * world_size * N - 2`` negatives, as in SimCLR.

    Args:
        temperature (float): Defaults to 0.1.
        gather (bool): Gather across ranks. Defaults to True.
    """

    def __init__(self, temperature: float = 0.1, gather: bool = True) -> None:
        super().__init__()
        self.temperature = temperature
        self.gather = gather

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Loss of (2N, C) interleaved embeddings."""
        if self.gather:
            z = torch.cat(GatherLayer.apply(z), dim=0)
        return nt_xent_loss(z, self.temperature)
