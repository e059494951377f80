"""DINO cross-entropy between student and teacher views."""

import math
from typing import Dict, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

from mmssl.models.utils.precision import at_least_fp32
from mmssl.registry import MODELS

from .centering import TeacherCentering


@MODELS.register_module()
class DINOLoss(TeacherCentering):
    """Self-distillation loss of DINO (https://arxiv.org/abs/2104.14294).

    For every pair (teacher global view t, student view s) with ``s != t``::

        H(t, s) = mean_b sum_k -q_t[b, k] * log_softmax(z_s[b] / T_s)[k]

    where ``q_t`` are the teacher targets (centred softmax with the teacher
    temperature, or Sinkhorn-Knopp as in DINOv2). The loss is the mean of
    ``H`` over all such pairs: ``G * (G - 1) + G * L`` of them for ``G``
    global and ``L`` local student views. The first ``G`` student views must
    be the same images as the teacher's ``G`` views, in the same order.

    ``local_weight`` scales the pairs with a local student view (DINOv3,
    https://arxiv.org/abs/2508.10104, down-weights them in its later
    stages): ``(sum_global H + local_weight * sum_local H) / n_pairs``,
    i.e. DINOv3's ``global_scale * L_global + w * local_scale * L_local``.

    Args:
        out_dim (int): Number of prototypes K.
        student_temp (float): Student temperature T_s. Defaults to 0.1.
        centering (str): ``'centering'`` (DINO, EMA centre) or
            ``'sinkhorn_knopp'`` (DINOv2). Defaults to ``'centering'``.
        center_momentum (float): Centre EMA momentum. Defaults to 0.9.
        sk_iters (int): Sinkhorn-Knopp iterations. Defaults to 3.
    """

    def __init__(
        self,
        out_dim: int = 65536,
        student_temp: float = 0.1,
        centering: str = 'centering',
        center_momentum: float = 0.9,
        sk_iters: int = 3,
        init_cfg=None,
    ) -> None:
        super().__init__(
            out_dim, centering, center_momentum, sk_iters, init_cfg
        )
        self.student_temp = student_temp

    def forward(
        self,
        student_logits: Tensor,
        teacher_logits: Tensor,
        teacher_temp: float,
        local_weight: float = 1.0,
        return_stats: bool = False,
    ) -> Union[Tensor, Tuple[Tensor, Dict[str, Tensor]]]:
        """Compute the loss.

        Args:
            student_logits (Tensor): (V, B, K), V = G + L student views.
            teacher_logits (Tensor): (G, B, K), teacher global views.
            teacher_temp (float): Teacher temperature.
            local_weight (float): Factor of the local-view pairs.
                Defaults to 1.0.
            return_stats (bool): Also return the mean entropies of the
                teacher's targets and of the student's predictions
                (:func:`relative_entropy`). Defaults to False.

        Returns:
            Tensor: Scalar loss; with ``return_stats`` a tuple (loss,
            ``dict(target_entropy=..., student_entropy=...)``).
        """
        num_g, batch, k = teacher_logits.shape
        num_v = student_logits.shape[0]
        if student_logits.shape[1:] != (batch, k) or num_v < num_g:
            raise ValueError(
                f'student_logits {tuple(student_logits.shape)} must be '
                f'(V >= {num_g}, {batch}, {k}) to match teacher_logits '
                f'{tuple(teacher_logits.shape)}.'
            )
        targets = self.teacher_targets(
            teacher_logits.reshape(num_g * batch, k), teacher_temp
        ).view(num_g, batch, k)
        log_probs = F.log_softmax(
            at_least_fp32(student_logits) / self.student_temp, dim=-1
        )  # (V, B, K)
        # ce[t, s] = mean_b -sum_k q_t log p_s, all pairs at once: (G, V)
        targets = targets.to(log_probs.dtype)  # float32 targets, as dinov2
        ce = -torch.einsum('tbk,sbk->ts', targets, log_probs) / batch
        num_terms = num_g * num_v - num_g  # pairs of different views
        if num_terms == 0:
            raise ValueError(
                'DINOLoss needs at least two views (one global '
                'and another global or local one).'
            )
        # weight of each pair (G, V): 0 on the same view, local_weight on
        # the local columns; made on the device (no host copy, no sync)
        w = torch.ones_like(ce)
        if local_weight != 1.0:
            w[:, num_g:] = local_weight
        w[:, :num_g].fill_diagonal_(0.0)
        loss = (ce * w).sum() / num_terms
        if not return_stats:
            return loss
        with torch.no_grad():
            stats = dict(
                target_entropy=relative_entropy(targets),
                student_entropy=relative_entropy(log_probs.exp(), log_probs),
            )
        return loss, stats


def relative_entropy(
    probs: Tensor, log_probs: Optional[Tensor] = None
) -> Tensor:
    """Mean entropy of distributions over K classes, divided by ln K.

    ``mean_rows(-sum_k p_k ln p_k) / ln K``: 1 for uniform rows (the
    fixed point of the DINO loss, where it equals ln K), 0 for one-hot
    rows. A device tensor: reading it is left to the logger (no host
    sync in the training step).

    Args:
        probs (Tensor): (..., K) rows that sum to 1.
        log_probs (Tensor, optional): Their logarithms, when at hand
            (more exact for tiny probabilities). Defaults to None.

    Returns:
        Tensor: Scalar in [0, 1] (float32).
    """
    k = probs.shape[-1]
    if k < 2:
        raise ValueError(f'Entropy relative to ln K needs K >= 2, got {k}.')
    probs = probs.float()
    if log_probs is None:
        plogp = torch.special.xlogy(probs, probs)  # 0 ln 0 = 0
    else:
        plogp = probs * log_probs.float()
    return -plogp.sum(dim=-1).mean() / math.log(k)
