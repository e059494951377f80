"""Teacher-target normalisation shared by the DINO-family losses.

Two ways to turn teacher logits into soft targets without collapse:

* ``'centering'`` (DINO, Caron et al. 2021, https://arxiv.org/abs/2104.14294):
  subtract a centre, an EMA (momentum 0.9) of the teacher's batch mean, then a
  sharp softmax with the teacher temperature.
* ``'sinkhorn_knopp'`` (SwAV-style, used by DINOv2, Oquab et al. 2023,
  https://arxiv.org/abs/2304.07193): a few Sinkhorn-Knopp iterations make the
  batch's assignment matrix doubly stochastic.

Every batch statistic is summed across ranks with ``mmengine.dist``
(a no-op when not distributed), so all ranks see the same targets.
"""

import torch
from mmengine.dist import all_reduce
from mmengine.model import BaseModule
from torch import Tensor

CENTERING_MODES = ('centering', 'sinkhorn_knopp')


@torch.no_grad()
def sinkhorn_knopp(
    teacher_logits: Tensor, teacher_temp: float, num_iters: int = 3
) -> Tensor:
    """Sinkhorn-Knopp normalised teacher targets (SwAV / DINOv2).

    Starting from ``Q = exp(logits / T)^T`` (K x B), alternately normalise the
    rows (each prototype gets total mass 1/K) and the columns (each sample
    gets mass 1/B); the result is scaled so every sample's row sums to 1.
    ``B`` is the number of rows summed over all ranks. For numerical safety
    the global maximum logit is subtracted first (it cancels out in the
    normalisation, so the result is unchanged).

    Args:
        teacher_logits (Tensor): (B, K) teacher logits of this rank.
        teacher_temp (float): Teacher temperature.
        num_iters (int): Sinkhorn-Knopp iterations. Defaults to 3.

    Returns:
        Tensor: (B, K) targets; every row sums to 1.
    """
    logits = teacher_logits.float()
    num_rows = torch.tensor(float(logits.shape[0]), device=logits.device)
    all_reduce(num_rows)
    max_logit = (
        logits.max()
        if logits.numel()
        else torch.tensor(-1e30, device=logits.device)
    ).clone()
    all_reduce(max_logit, op='max')
    q = torch.exp((logits - max_logit) / teacher_temp).t()  # (K, B)
    k = q.shape[0]
    total = q.sum()
    all_reduce(total)
    q = q / total
    for _ in range(num_iters):
        row_sums = q.sum(dim=1, keepdim=True)  # (K, 1), over all ranks
        all_reduce(row_sums)
        q = q / row_sums.clamp(min=torch.finfo(q.dtype).tiny) / k
        q = q / q.sum(dim=0, keepdim=True) / num_rows
    q = q * num_rows
    return q.t()  # (B, K)


class TeacherCentering(BaseModule):
    """Holds the teacher centre (a buffer, so it is checkpointed).

    Args:
        out_dim (int): Number of prototypes K.
        centering (str): ``'centering'`` or ``'sinkhorn_knopp'``.
        center_momentum (float): EMA momentum of the centre. Defaults to 0.9.
        sk_iters (int): Sinkhorn-Knopp iterations. Defaults to 3.
    """

    def __init__(
        self,
        out_dim: int,
        centering: str = 'centering',
        center_momentum: float = 0.9,
        sk_iters: int = 3,
        init_cfg=None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        if centering not in CENTERING_MODES:
            raise ValueError(
                f'centering={centering!r} is not supported; use '
                f'one of {CENTERING_MODES}.'
            )
        self.out_dim = out_dim
        self.centering = centering
        self.center_momentum = center_momentum
        self.sk_iters = sk_iters
        self.register_buffer('center', torch.zeros(1, out_dim))

    @torch.no_grad()
    def teacher_targets(
        self, teacher_logits: Tensor, teacher_temp: float
    ) -> Tensor:
        """Soft targets (rows sum to 1) from teacher logits (B, K).

        In ``'centering'`` mode the centre is updated afterwards with this
        batch's mean (so the targets use the centre of the previous batches,
        as in DINO).
        """
        if teacher_logits.shape[-1] != self.out_dim:
            raise ValueError(
                f'Teacher logits have {teacher_logits.shape[-1]} prototypes '
                f'but the loss was built with out_dim={self.out_dim}.'
            )
        logits = teacher_logits.float()
        if self.centering == 'sinkhorn_knopp':
            return sinkhorn_knopp(logits, teacher_temp, self.sk_iters)
        targets = torch.softmax((logits - self.center) / teacher_temp, dim=-1)
        self.update_center(logits)
        return targets

    @torch.no_grad()
    def update_center(self, teacher_logits: Tensor) -> None:
        """EMA update of the centre with the all-rank batch mean."""
        stats = torch.cat(
            [
                teacher_logits.float().sum(dim=0),
                teacher_logits.new_tensor([float(teacher_logits.shape[0])]),
            ]
        )  # (K + 1,): sum of rows, number of rows
        all_reduce(stats)
        count = stats[-1]
        if count > 0:
            batch_center = (stats[:-1] / count).unsqueeze(0)  # (1, K)
            self.center.mul_(self.center_momentum).add_(
                batch_center, alpha=1 - self.center_momentum
            )
