"""DINOv2 training objective."""

from typing import Dict, List

from mmpretrain.structures import DataSample
from torch import Tensor

from mmssl.registry import MODELS

from .ibot import iBOT


@MODELS.register_module()
class DINOv2(iBOT):
    """DINOv2 (Oquab et al. 2023, https://arxiv.org/abs/2304.07193).

    :class:`iBOT` (DINO loss on CLS tokens + iBOT masked-patch loss, both
    with Sinkhorn-Knopp teacher targets in the DINOv2 recipe) plus the KoLeo
    regulariser on the student's backbone CLS tokens of each global crop,
    summed over the global crops as in DINOv2::

        loss = w_dino * L_dino + w_ibot * L_ibot
               + w_koleo * sum_g KoLeo(student_cls[g])

    Args:
        koleo_loss (dict): ``KoLeoLoss`` config. Defaults to
            ``dict(type='KoLeoLoss')``.
        **kwargs: See :class:`iBOT`; ``loss_weights`` keys ``dino``
            (1.0), ``ibot`` (1.0), ``koleo`` (0.1).
    """

    default_loss_weights = dict(dino=1.0, ibot=1.0, koleo=0.1)

    def __init__(
        self, *args, koleo_loss: dict = dict(type='KoLeoLoss'), **kwargs
    ) -> None:
        self._koleo_cfg = koleo_loss
        super().__init__(*args, **kwargs)

    def _build_extra(self) -> None:
        super()._build_extra()
        self.koleo_loss = MODELS.build(self._koleo_cfg)

    def loss(
        self, inputs: List[Tensor], data_samples: List[DataSample]
    ) -> Dict[str, Tensor]:
        """Returns ``dict(loss_dino=..., loss_ibot=..., loss_koleo=...)``."""
        out = self._ibot_forward(inputs, data_samples)
        losses = out['losses']
        cls = out['student_global_cls']  # (G, B, C)
        koleo = sum(self.koleo_loss(cls[g]) for g in range(cls.shape[0]))
        losses['loss_koleo'] = self.loss_weights['koleo'] * koleo
        return losses
