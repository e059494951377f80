"""Gram anchoring loss of DINOv3."""

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmssl.models.utils.precision import at_least_fp32
from mmssl.registry import MODELS

CLIP_MODES = (None, 'both', 'teacher')


@MODELS.register_module()
class GramLoss(nn.Module):
    """Gram anchoring (Simeoni et al. 2025, DINOv3,
    https://arxiv.org/abs/2508.10104).

    The patch features of an image are L2-normalised and their Gram matrix
    (all pairwise cosine similarities) is compared with the one of a frozen
    Gram teacher::

        S = X_s X_s^T, T = X_t X_t^T   (per image, N x N)
        loss = mean over images and entries of (S - T)^2

    which keeps the patch-to-patch similarity structure of the teacher
    while the features themselves may move. The defaults are those of the
    DINOv3 Gram-anchoring stage: image-level Gram matrices, features
    normalised, negative similarities kept.

    Args:
        normalize (bool): L2-normalise each patch feature first.
            Defaults to True.
        img_level (bool): One Gram matrix per image (B, N, N); ``False``
            uses one over all patches of the batch (B*N, B*N).
            Defaults to True.
        clip_negatives (str, optional): ``None`` keeps negative
            similarities; ``'both'`` sets negative entries of ``S`` and of
            ``T`` to 0; ``'teacher'`` sets negative entries of ``T`` to 0
            and those of ``S`` where both are negative. Defaults to None.
    """

    def __init__(
        self,
        normalize: bool = True,
        img_level: bool = True,
        clip_negatives: Optional[str] = None,
    ) -> None:
        super().__init__()
        if clip_negatives not in CLIP_MODES:
            raise ValueError(
                f'clip_negatives={clip_negatives!r}: use one of {CLIP_MODES}.'
            )
        self.normalize = normalize
        self.img_level = img_level
        self.clip_negatives = clip_negatives

    def _gram(self, feats: Tensor) -> Tensor:
        x = at_least_fp32(feats)  # float64 stays float64
        if self.normalize:
            x = F.normalize(x, dim=-1)
        if not self.img_level:
            x = x.flatten(0, -2)  # (B*N, C)
        return x @ x.transpose(-1, -2)  # (B, N, N) or (B*N, B*N)

    def forward(self, student: Tensor, teacher: Tensor) -> Tensor:
        """Args:
            student (Tensor): (B, N, C) student patch features.
            teacher (Tensor): (B, N, C) Gram teacher patch features (no
                gradient flows into them).

        Returns:
            Tensor: Scalar loss.
        """
        if student.dim() != 3 or student.shape != teacher.shape:
            raise ValueError(
                'GramLoss needs (B, N, C) features of equal shapes, got '
                f'{tuple(student.shape)} and {tuple(teacher.shape)}.'
            )
        s = self._gram(student)
        with torch.no_grad():
            t = self._gram(teacher.detach())
        if self.clip_negatives == 'both':
            s = s.clamp(min=0.0)
            t = t.clamp(min=0.0)
        elif self.clip_negatives == 'teacher':
            s = torch.where((s < 0) & (t < 0), torch.zeros_like(s), s)
            t = t.clamp(min=0.0)
        return F.mse_loss(s, t)
