"""iBOT masked-patch self-distillation loss."""

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from mmssl.models.utils.precision import at_least_fp32, loss_dtype
from mmssl.registry import MODELS

from .centering import TeacherCentering


@MODELS.register_module()
class iBOTPatchLoss(TeacherCentering):
    """Masked image modelling loss of iBOT (https://arxiv.org/abs/2111.07832)
    in the form used by DINOv2 (``iBOTPatchLoss.forward_masked``).

    For every masked patch ``p`` of image ``i`` the student (which saw the
    masked image) predicts the teacher's target for the same patch of the
    unmasked image::

        l_ip = sum_k -q_ip[k] * log_softmax(z_ip / T_s)[k]
        loss = sum_i (1 / n_i) sum_{p masked in i} l_ip / D

    with ``n_i`` the number of masked patches of image ``i``. With
    ``average_over='all_images'`` (default, as DINOv2 and iBOT) ``D`` is the
    number of images including the unmasked ones; with
    ``'masked_images'`` it is the number of images with at least one masked
    patch (the loss is then the plain mean of the per-image means and does
    not shrink with the masking probability).

    Args:
        out_dim (int): Number of patch prototypes K.
        student_temp (float): Student temperature. Defaults to 0.1.
        centering (str): ``'centering'`` or ``'sinkhorn_knopp'``.
        center_momentum (float): Centre EMA momentum. Defaults to 0.9.
        sk_iters (int): Sinkhorn-Knopp iterations. Defaults to 3.
        average_over (str): ``'all_images'`` or ``'masked_images'``.
    """

    def __init__(
        self,
        out_dim: int = 65536,
        student_temp: float = 0.1,
        centering: str = 'centering',
        center_momentum: float = 0.9,
        sk_iters: int = 3,
        average_over: str = 'all_images',
        init_cfg=None,
    ) -> None:
        super().__init__(
            out_dim, centering, center_momentum, sk_iters, init_cfg
        )
        if average_over not in ('all_images', 'masked_images'):
            raise ValueError(
                f'average_over={average_over!r}: use '
                "'all_images' or 'masked_images'."
            )
        self.student_temp = student_temp
        self.average_over = average_over

    def forward(
        self,
        student_logits: Tensor,
        teacher_logits: Tensor,
        masks: Tensor,
        teacher_temp: float,
        index: Optional[Tensor] = None,
    ) -> Tensor:
        """Compute the loss.

        Args:
            student_logits (Tensor): (M, K) student logits of the masked
                patches, in ``masks.nonzero()`` order (``tokens[masks]``);
                with ``index``, (U, K) rows of the fixed-size buffer.
            teacher_logits (Tensor): Teacher logits, same rows.
            masks (Tensor): (N_img, P) bool, True where a patch is masked.
            teacher_temp (float): Teacher temperature.
            index (Tensor, optional): (U,) flat positions in ``masks`` of
                the buffer's rows (:func:`~mmssl.models.algorithms.
                dino_parts.mask_buffer_index`): every masked patch once,
                then padding rows at unmasked positions, which get no
                weight. Static shapes and no host sync; None: the rows are
                exactly the masked patches.

        Returns:
            Tensor: Scalar loss.
        """
        masks = masks.flatten(1).bool()  # (N_img, P)
        dtype = loss_dtype(student_logits)
        per_image = masks.sum(dim=1)  # (N_img,)
        if index is None:
            valid = None
            num_rows = int(per_image.sum())  # host sync: dynamic path only
            weights = 1.0 / per_image.clamp(min=1).to(dtype)  # (N_img,)
            weights = weights.unsqueeze(1).expand_as(masks)[masks]  # (M,)
        else:
            num_rows = index.shape[0]
            valid = masks.flatten().index_select(0, index)  # (U,)
            image = torch.div(index, masks.shape[1], rounding_mode='floor')
            weights = 1.0 / per_image.index_select(0, image).clamp(min=1)
            weights = torch.where(valid, weights.to(dtype), 0.0)  # (U,)
        if (
            student_logits.shape[0] != num_rows
            or teacher_logits.shape[0] != num_rows
        ):
            raise ValueError(
                f'Expected {num_rows} masked-patch rows (masks.sum() or the '
                f'buffer size), got student {tuple(student_logits.shape)} '
                f'and teacher {tuple(teacher_logits.shape)}.'
            )
        targets = self.teacher_targets(teacher_logits, teacher_temp, valid)
        if valid is not None:  # padding rows: no target, whatever the logits
            targets.masked_fill_(~valid.unsqueeze(1), 0.0)  # in place
        log_probs = F.log_softmax(
            at_least_fp32(student_logits) / self.student_temp, dim=-1
        )
        ce = -(targets * log_probs).sum(dim=-1)  # (M,) or (U,)
        if valid is not None:  # padding rows count 0, even if not finite
            ce = torch.where(valid, ce, 0.0)
        loss = (ce * weights).sum()
        if self.average_over == 'all_images':
            return loss / max(masks.shape[0], 1)
        return loss / (per_image > 0).sum().clamp(min=1)
