"""The DINO family: DINO, iBOT, DINOv2 and DINOv3 as one algorithm."""

from typing import Dict, List, Optional

import torch
from torch import Tensor

from mmssl.registry import MODELS

from .dino_parts import (
    build_terms,
    check_patches,
    forward_backbone,
    global_masks,
    patch_grid,
    resize_patch_grid,
    split_views,
)
from .ema_teacher import EMATeacherSelfSupervisor


@MODELS.register_module()
class DINOFamily(EMATeacherSelfSupervisor):
    """Student / EMA-teacher self-distillation with a list of loss terms.

    DINO (https://arxiv.org/abs/2104.14294) = ``dino_cls``; iBOT
    (https://arxiv.org/abs/2111.07832) adds ``ibot_patch``; DINOv2
    (https://arxiv.org/abs/2304.07193) adds ``koleo``; DINOv3
    (https://arxiv.org/abs/2508.10104) adds ``gram``. Each term is a
    criterion of ``mmssl.models.losses`` (``DINOLoss``, ``iBOTPatchLoss``,
    ``KoLeoLoss``, ``GramLoss``) with a ``weight``. Hooks run the
    schedules: ``TeacherEMAHook``, ``TeacherTempWarmupHook``,
    ``GramTeacherHook``, ``LossWeightScheduleHook``.

    Args:
        backbone (dict): Backbone; patch terms need ViT tokens
            (``out_type='raw'``) and ``forward(x, mask=...)``.
        head (dict): ``DINOHead`` on CLS features.
        terms (dict): Term name -> criterion config with an optional
            ``weight`` (default 1.0).
        patch_head (dict, optional): Head for masked patches; ``None``
            shares ``head``.
        num_global_crops (int): G, the first G views. Defaults to 2.
        num_gram_crops (int): 0, or G when the last G views are
            high-resolution copies of the global crops for the Gram teacher.
        teacher_temp (float): Initial teacher temperature.
        loss_weights (dict, optional): Overrides of the term weights, plus
            ``dino_local``: factor of the local-crop pairs in the DINO CE.
    """

    #: term name -> key in ``loss_weights`` and in the output ``loss_<key>``
    weight_keys = dict(
        dino_cls='dino_cls',
        ibot_patch='ibot_patch',
        koleo='koleo',
        gram='gram',
    )

    def __init__(
        self,
        backbone: dict,
        head: dict,
        terms: Dict[str, dict],
        patch_head: Optional[dict] = None,
        num_global_crops: int = 2,
        num_gram_crops: int = 0,
        teacher_temp: float = 0.04,
        loss_weights: Optional[dict] = None,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, head=head, **kwargs)
        if num_global_crops < 1 or num_gram_crops not in (0, num_global_crops):
            raise ValueError(
                'Need num_global_crops >= 1 and num_gram_crops '
                'in (0, num_global_crops).'
            )
        self.num_global_crops = num_global_crops
        self.num_gram_crops = num_gram_crops
        self.teacher_temp = teacher_temp
        self.terms = tuple(terms)
        self.loss_weights = build_terms(
            self, terms, self.weight_keys, loss_weights
        )
        self.patch_head = MODELS.build(patch_head) if patch_head else None
        self.build_teachers(gram='gram' in self.terms)

    def loss(self, inputs: List[Tensor], data_samples) -> Dict[str, Tensor]:
        """Weighted terms ``dict(loss_<key>=...)`` of one training step.

        Args:
            inputs (list[Tensor]): Views (B, 3, h, w): G global, the local
                ones, then ``num_gram_crops`` Gram-teacher crops.
            data_samples (list[DataSample]): ``mask`` (G, Hp, Wp), read for
                the ``ibot_patch`` term.
        """
        g, b, temp = self.num_global_crops, len(inputs[0]), self.teacher_temp
        global_x, locals_, gram_x = split_views(inputs, g, self.num_gram_crops)
        masks = None  # (G*B, P), True = masked for the student
        if 'ibot_patch' in self.terms:
            masks = global_masks(data_samples, g, global_x.device)
        with torch.no_grad():
            t_cls, t_patch = forward_backbone(
                self.teacher['backbone'], global_x
            )
            if masks is not None:
                check_patches(t_patch, masks)
            t_patch = None if masks is None else t_patch[masks]  # (M, C)
            t_logits, t_patch_logits = self._heads(
                self.teacher, t_cls, t_patch
            )
        s_cls_g, s_patch = forward_backbone(self.backbone, global_x, masks)
        s_cls = torch.cat(
            [s_cls_g]
            + [forward_backbone(self.backbone, x)[0] for x in locals_]
        )  # (V*B, C)
        s_logits, s_patch_logits = self._heads(
            self.student_modules(),
            s_cls,
            None if masks is None else s_patch[masks],
        )
        terms = dict(
            dino_cls=self.dino_loss(
                s_logits.view(-1, b, s_logits.shape[-1]),  # (V, B, K)
                t_logits.view(g, b, -1),  # (G, B, K)
                temp,
                local_weight=self.loss_weights.get('dino_local', 1.0),
            )
        )
        if 'ibot_patch' in self.terms:
            terms['ibot_patch'] = self.ibot_loss(
                s_patch_logits, t_patch_logits, masks, temp
            )
        if 'koleo' in self.terms:  # summed over the global crops (DINOv2)
            cls = s_cls_g.view(g, b, -1)
            terms['koleo'] = sum(self.koleo_loss(cls[i]) for i in range(g))
        if 'gram' in self.terms:
            x = global_x if gram_x is None else gram_x
            terms['gram'] = self.gram_loss(
                s_patch,
                self._gram_targets(x, patch_grid(global_x, s_patch.shape[1])),
            )
        keys, w = self.weight_keys, self.loss_weights
        return {f'loss_{keys[k]}': w[keys[k]] * v for k, v in terms.items()}

    def _heads(self, heads, cls: Tensor, patches: Optional[Tensor]):
        """CLS and masked-patch logits (one call when the head is shared)."""
        if patches is None:
            return heads['head'](cls), None
        if 'patch_head' not in heads:
            out = heads['head'](torch.cat([cls, patches]))
            return out[: len(cls)], out[len(cls) :]
        return heads['head'](cls), heads['patch_head'](patches)

    @torch.no_grad()
    def _gram_targets(self, x: Tensor, grid) -> Tensor:
        """Gram teacher patch features of ``x`` on the student's grid."""
        if int(self.gram_teacher_updates) == 0:
            raise RuntimeError(
                'The Gram teacher was never set from the EMA '
                'teacher: add GramTeacherHook to custom_hooks.'
            )
        _, patches = forward_backbone(self.gram_teacher, x)  # (G*B, N', C)
        return resize_patch_grid(
            patches, patch_grid(x, patches.shape[1]), grid
        )
