"""SimCLR for inputs of any dimensionality (3D volumes included)."""

from typing import Dict, List, Optional

import torch
from mmpretrain.models.selfsup.base import BaseSelfSupervisor

from mmssl.registry import MODELS


@MODELS.register_module()
class SimCLR3D(BaseSelfSupervisor):
    """SimCLR (Chen et al., 2020, https://arxiv.org/abs/2002.05709) on
    views of any shape: volumes (B, C, D, H, W) as well as images.

    mmpretrain's ``SimCLR`` reshapes its views to 4D; this one stacks the
    two views of each sample next to each other (rows ``2k`` and
    ``2k + 1``), whatever their dimensionality, and hands the projected
    embeddings to ``loss`` (:class:`NTXentLoss` by default).

    Args:
        backbone (dict): Backbone, e.g. ``VisionTransformer3D`` with
            ``out_type='cls_token'`` or ``SwinViT3D`` with
            ``out_type='avg_featmap'``.
        neck (dict): Projector, e.g. ``NonLinearNeck`` with
            ``with_avg_pool=False``.
        loss (dict): Criterion of the (2N, C) embeddings. Defaults to
            ``NTXentLoss`` at temperature 0.1.
        **kwargs: ``BaseSelfSupervisor`` arguments (``data_preprocessor``,
            ``init_cfg``).
    """

    def __init__(
        self,
        backbone: dict,
        neck: dict,
        loss: Optional[dict] = None,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, **kwargs)
        self.criterion = MODELS.build(
            loss or dict(type='NTXentLoss', temperature=0.1)
        )
        # no masked inputs: a ViT backbone's mask token is unused
        token = getattr(self.backbone, 'mask_token', None)
        if token is not None:
            token.requires_grad_(False)

    def loss(
        self, inputs: List[torch.Tensor], data_samples
    ) -> Dict[str, torch.Tensor]:
        """NT-Xent of the first two views.

        Args:
            inputs (list[torch.Tensor]): Views, each (B, C, *spatial).
            data_samples (list): Unused.

        Returns:
            dict: ``loss``.
        """
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError('SimCLR3D needs two views per sample.')
        # (B, 2, C, ...) -> (2B, C, ...): the views of a sample side by side
        x = torch.stack(list(inputs[:2]), dim=1).flatten(0, 1)
        z = self.neck(self.backbone(x))[0]  # (2B, C')
        return dict(loss=self.criterion(z))
