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

from math import inf
from typing import Optional

import torch
from mmengine.dist import all_reduce
from mmengine.model import BaseModule
from torch import Tensor

from mmssl.models.utils.precision import at_least_fp32, loss_dtype

CENTERING_MODES = ('centering', 'sinkhorn_knopp')


@torch.no_grad()
def sinkhorn_knopp(
    teacher_logits: Tensor,
    teacher_temp: float,
    num_iters: int = 3,
    valid: Optional[Tensor] = None,
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
        valid (Tensor, optional): (B,) bool, False for padding rows (the
            fixed-size buffer of masked patches): they take no part in the
            prototype sums and their targets are 0. None: all rows are
            valid.

    Returns:
        Tensor: (B, K) float32 targets (float64 for float64 logits);
        every (valid) row sums to 1.
    """
    if num_iters < 1:
        raise ValueError(f'num_iters must be >= 1, got {num_iters}.')
    q = teacher_logits.to(loss_dtype(teacher_logits), copy=True)
    keep = None if valid is None else valid.reshape(-1, 1)  # (B, 1)
    if q.shape[0]:
        col_max = (q if keep is None else q.masked_fill(~keep, -inf)).amax(0)
    else:  # no rows on this rank; the other ranks supply the maxima
        col_max = q.new_full((q.shape[1],), -inf)
    all_reduce(col_max, op='max')
    tiny = torch.finfo(q.dtype).tiny
    if keep is not None:  # padding rows := the maxima (0 after the shift)
        col_max = torch.nan_to_num(col_max, neginf=0.0)  # no valid row
        torch.where(keep, q, col_max, out=q)
    q.sub_(col_max).div_(teacher_temp)  # <= 0, max 0 on some rank
    col_sums = _col_sums(torch.exp(q), keep)  # (K,), >= 1 over all ranks
    all_reduce(col_sums)
    # log Q of the prototype-normalised matrix, each sample shifted first
    # so that no sample underflows as a whole
    col_sums = col_sums.clamp_(min=1.0).log_()  # 1: no valid row at all
    q.sub_(q.amax(dim=1, keepdim=True)).sub_(col_sums).exp_()
    if keep is not None:
        q.mul_(keep)  # padding rows are 0 from here on
    q.div_(q.sum(dim=1, keepdim=True).clamp_(min=tiny))
    for _ in range(num_iters - 1):
        col_sums = q.sum(dim=0)  # (K,)
        all_reduce(col_sums)
        q.div_(col_sums.clamp_(min=tiny))
        q.div_(q.sum(dim=1, keepdim=True).clamp_(min=tiny))
    return q


def _col_sums(q: Tensor, keep: Optional[Tensor]) -> Tensor:
    """Column sums (K,) of ``q`` (B, K) over the rows where ``keep``."""
    if keep is None:
        return q.sum(dim=0)
    return (keep.to(q.dtype).reshape(1, -1) @ q).squeeze(0)  # no (B, K) temp


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
        self,
        teacher_logits: Tensor,
        teacher_temp: float,
        valid: Optional[Tensor] = None,
    ) -> Tensor:
        """Soft targets (rows sum to 1) from teacher logits (B, K).

        In ``'centering'`` mode the centre is updated afterwards with this
        batch's mean (so the targets use the centre of the previous batches,
        as in DINO). ``valid`` (B,) bool leaves padding rows out of every
        batch statistic (their targets are finite and meaningless).
        """
        if teacher_logits.shape[-1] != self.out_dim:
            raise ValueError(
                f'Teacher logits have {teacher_logits.shape[-1]} prototypes '
                f'but the loss was built with out_dim={self.out_dim}.'
            )
        logits = at_least_fp32(teacher_logits)
        if self.centering == 'sinkhorn_knopp':
            return sinkhorn_knopp(
                logits, teacher_temp, self.sk_iters, valid=valid
            )
        targets = torch.softmax((logits - self.center) / teacher_temp, dim=-1)
        self.update_center(logits, valid)
        return targets

    @torch.no_grad()
    def update_center(
        self, teacher_logits: Tensor, valid: Optional[Tensor] = None
    ) -> None:
        """EMA update of the centre with the all-rank batch mean (of the
        ``valid`` rows); the centre stays when no rank has a row. Decided
        on the device: no host sync."""
        logits = at_least_fp32(teacher_logits)
        count = logits.new_full((1,), float(logits.shape[0]))
        if valid is not None:
            keep = valid.reshape(-1, 1)
            logits = torch.where(keep, logits, 0.0)
            count = keep.sum(dim=0, dtype=logits.dtype)  # (1,)
        stats = torch.cat([logits.sum(dim=0), count])  # (K + 1,)
        all_reduce(stats)
        count = stats[-1]
        batch_center = (stats[:-1] / count.clamp(min=1)).unsqueeze(0)
        # momentum 1 (no change) when there were no rows
        m = torch.where(count > 0, self.center_momentum, 1.0)
        self.center.mul_(m).add_(batch_center * (1 - m))
