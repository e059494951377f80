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

    Sinkhorn-Knopp (Cuturi 2013, https://arxiv.org/abs/1306.0895), as used
    for self-supervised targets by SwAV (Caron et al. 2020,
    https://arxiv.org/abs/2006.09882) and DINOv2: starting from
    ``Q = exp(logits / T)`` (B x K), alternately normalise the prototypes
    (columns: each prototype gets the same total mass over the whole
    batch, summed over all ranks) and the samples (rows: each sample's
    targets sum to 1), ``num_iters`` times, prototypes first.

    Why the shifts are exact: every normalisation divides a column or a
    row by its sum, so multiplying a column or a row of ``Q`` by a positive
    constant before it changes nothing afterwards. Subtracting each
    prototype's maximum logit over the batch (all-reduced MAX across
    ranks) scales column k by ``exp(-max_k / T)``, which the first
    prototype normalisation absorbs; subtracting each sample's maximum
    scales row b, which the sample normalisation absorbs; the constants
    ``1/K``, ``1/B`` and the total mass of the reference algorithm are
    absorbed the same way and are left out. The first prototype
    normalisation is done in log space (``logits - log(column sum)``), so
    a prototype far below the global maximum keeps its mass instead of
    underflowing to zero, and after the per-sample shift every sample has
    an entry of at least ``1/B``. Later scalings are bounded by powers of
    ``B * K``, so the float32 result equals an exact (float64, log-space)
    Sinkhorn-Knopp at any logit range up to rounding; only a sample whose
    logits all lie far below the others' loses relative precision, about
    1e-7 times that offset / T, as in any float32 implementation.

    Cost: one (B, K) float32 buffer, updated in place, plus one temporary
    for the first column sums; one all-reduce of K numbers per prototype
    normalisation plus one for the maxima.

    Args:
        teacher_logits (Tensor): (B, K) teacher logits of this rank; B may
            differ between ranks and may be 0.
        teacher_temp (float): Teacher temperature.
        num_iters (int): Sinkhorn-Knopp iterations, >= 1. Defaults to 3.

    Returns:
        Tensor: (B, K) float32 targets; every row sums to 1.
    """
    if num_iters < 1:
        raise ValueError(f'num_iters must be >= 1, got {num_iters}.')
    q = teacher_logits.to(torch.float32, copy=True)  # (B, K)
    if q.shape[0]:
        col_max = q.amax(dim=0)  # (K,)
    else:  # no rows on this rank; the other ranks supply the maxima
        col_max = q.new_full((q.shape[1],), float('-inf'))
    all_reduce(col_max, op='max')
    q.sub_(col_max).div_(teacher_temp)  # <= 0, max 0 on some rank
    col_sums = torch.exp(q).sum(dim=0)  # (K,), >= 1 over all ranks
    all_reduce(col_sums)
    # log Q of the prototype-normalised matrix, each sample shifted first
    # so that no sample underflows as a whole
    q.sub_(q.amax(dim=1, keepdim=True)).sub_(col_sums.log_()).exp_()
    q.div_(q.sum(dim=1, keepdim=True))
    tiny = torch.finfo(q.dtype).tiny
    for _ in range(num_iters - 1):
        col_sums = q.sum(dim=0)  # (K,)
        all_reduce(col_sums)
        q.div_(col_sums.clamp_(min=tiny))
        q.div_(q.sum(dim=1, keepdim=True))
    return q


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
