"""iBOT: DINO on the CLS token plus masked-patch self-distillation."""

from typing import Dict, List, Optional

import torch
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from mmssl.registry import MODELS

from .dino import DINO


@MODELS.register_module()
class iBOT(DINO):
    """iBOT (Zhou et al. 2021, https://arxiv.org/abs/2111.07832).

    On top of :class:`DINO`, the student sees its global crops with some
    patches replaced by the backbone's mask token (masks from
    ``BlockwiseMaskGenerator``, ``data_sample.mask`` of shape (G, Hp, Wp));
    for every masked patch it predicts the teacher's output for the same
    patch of the unmasked crop (``iBOTPatchLoss``). The student CLS of the
    masked global crops feeds the DINO loss, as in iBOT and DINOv2. Only
    masked patch tokens go through the patch head (as in DINOv2).

    The backbone must return all tokens (``out_type='raw'``) and accept
    ``forward(x, mask=...)`` (``DINOVisionTransformer``).

    Args:
        patch_head (dict, optional): Separate ``DINOHead`` for the patch
            tokens; ``None`` (default) shares ``head`` for CLS and patches
            (one head call on both).
        ibot_loss (dict): ``iBOTPatchLoss`` config.
        **kwargs: See :class:`DINO`; ``loss_weights`` keys ``dino``,
            ``ibot``.
    """

    default_loss_weights = dict(dino=1.0, ibot=1.0)

    def __init__(
        self,
        *args,
        ibot_loss: dict,
        patch_head: Optional[dict] = None,
        **kwargs,
    ) -> None:
        self._extra_cfg = dict(ibot_loss=ibot_loss, patch_head=patch_head)
        super().__init__(*args, **kwargs)

    def _build_extra(self) -> None:
        cfg = self._extra_cfg
        self.ibot_loss = MODELS.build(cfg['ibot_loss'])
        self.patch_head = (
            MODELS.build(cfg['patch_head'])
            if cfg['patch_head'] is not None
            else None
        )

    def _student_modules(self) -> Dict[str, nn.Module]:
        modules = super()._student_modules()
        if self.patch_head is not None:
            modules['patch_head'] = self.patch_head
        return modules

    def _global_masks(
        self, data_samples: List[DataSample], device: torch.device
    ) -> Tensor:
        """(G*B, Hp*Wp) bool masks in the order of the concatenated crops."""
        if not data_samples or 'mask' not in data_samples[0]:
            raise ValueError(
                f'{type(self).__name__} needs patch masks in data_sample.mask'
                ': add BlockwiseMaskGenerator after MultiCrop in the '
                'pipeline.'
            )
        masks = torch.stack([s.mask for s in data_samples]).to(device)
        if masks.dim() == 3:  # (B, G, Hp*Wp) already flat
            masks = masks.unsqueeze(-1)
        batch, num_g = masks.shape[:2]
        if num_g != self.num_global_crops:
            raise ValueError(
                f'data_sample.mask has {num_g} crops per image, expected '
                f'num_global_crops={self.num_global_crops}.'
            )
        # (B, G, ...) -> (G, B, ...) -> (G*B, P): crop-major like the inputs
        return masks.transpose(0, 1).reshape(num_g * batch, -1).bool()

    def _patch_logits(
        self, cls: Tensor, patches: Tensor, teacher: bool
    ) -> tuple:
        """Run CLS and masked patch features through the head(s).

        Returns (cls_logits, patch_logits). With a shared head both go
        through one call.
        """
        heads = (
            self.teacher
            if teacher
            else dict(head=self.head, patch_head=self.patch_head)
        )
        if self.patch_head is None:
            out = heads['head'](torch.cat([cls, patches]))
            return out[: cls.shape[0]], out[cls.shape[0] :]
        return heads['head'](cls), heads['patch_head'](patches)

    def _ibot_forward(
        self, inputs: List[Tensor], data_samples: List[DataSample]
    ) -> dict:
        """Shared forward of iBOT / DINOv2; returns losses and features."""
        global_x, local_groups = self._split_views(inputs)
        num_g, batch = self.num_global_crops, inputs[0].shape[0]
        masks = self._global_masks(data_samples, global_x.device)
        with torch.no_grad():
            t_cls, t_patch = self._forward_backbone(
                self.teacher['backbone'], global_x
            )
            if t_patch is None:
                raise ValueError(
                    f'{type(self).__name__} needs patch tokens: build the '
                    "backbone with out_type='raw'."
                )
            if t_patch.shape[1] != masks.shape[1]:
                raise ValueError(
                    f'The masks have {masks.shape[1]} patches per crop but '
                    f'the backbone gives {t_patch.shape[1]} patch tokens: '
                    'set the mask generator input_size to global crop size '
                    '// patch size.'
                )
            t_cls_logits, t_patch_logits = self._patch_logits(
                t_cls, t_patch[masks], teacher=True
            )
        s_cls_g, s_patch = self._forward_backbone(
            self.backbone, global_x, mask=masks
        )
        s_cls_l = self._student_local_cls(local_groups)
        s_cls = s_cls_g if s_cls_l is None else torch.cat([s_cls_g, s_cls_l])
        s_cls_logits, s_patch_logits = self._patch_logits(
            s_cls, s_patch[masks], teacher=False
        )
        loss_dino = self.dino_loss(
            s_cls_logits.view(-1, batch, s_cls_logits.shape[-1]),
            t_cls_logits.view(num_g, batch, -1),
            self.teacher_temp,
        )
        loss_ibot = self.ibot_loss(
            s_patch_logits, t_patch_logits, masks, self.teacher_temp
        )
        return dict(
            losses=dict(
                loss_dino=self.loss_weights['dino'] * loss_dino,
                loss_ibot=self.loss_weights['ibot'] * loss_ibot,
            ),
            student_global_cls=s_cls_g.view(num_g, batch, -1),
        )

    def loss(
        self, inputs: List[Tensor], data_samples: List[DataSample]
    ) -> Dict[str, Tensor]:
        """Returns ``dict(loss_dino=..., loss_ibot=...)``."""
        return self._ibot_forward(inputs, data_samples)['losses']
