"""The DINO family: DINO, iBOT, DINOv2 and DINOv3 as one algorithm."""

from typing import Dict, List, Optional, Union

import torch
from torch import Tensor

from mmssl.registry import MODELS

from .dino_parts import (
    TERM_ATTRS,
    build_terms,
    forward_backbone,
    forward_groups,
    global_masks,
    mask_buffer_index,
    mask_buffer_size,
    masked_tokens,
    patch_grid,
    resize_patch_grid,
    split_views,
)
from .ema_teacher import EMATeacherSelfSupervisor


@MODELS.register_module()
class DINOFamily(EMATeacherSelfSupervisor):
    """Student / EMA-teacher self-distillation with a list of loss terms.

    DINO (arXiv 2104.14294) = ``dino_cls``; iBOT (2111.07832) adds
    ``ibot_patch``; DINOv2 (2304.07193) ``koleo``; DINOv3 (2508.10104)
    ``gram``. Each term is a criterion of ``mmssl.models.losses`` with a
    ``weight``. Schedules are hooks: ``TeacherEMAHook``,
    ``TeacherTempWarmupHook``, ``GramTeacherHook``,
    ``LossWeightScheduleHook``.

    Args:
        backbone (dict): Backbone; patch terms need ViT tokens
            (``out_type='raw'``) and ``forward(x, mask=...)``.
        head (dict): ``DINOHead`` on CLS features.
        terms (dict): Term -> criterion config (+ ``weight``, default 1).
        patch_head (dict, optional): Masked-patch head (None: ``head``).
        num_global_crops (int): G, the first G views. Defaults to 2.
        num_gram_crops (int): 0, or G when the last G views are
            high-resolution copies of the global crops for the Gram teacher.
        teacher_temp (float): Initial teacher temperature.
        loss_weights (dict, optional): Overrides of the term weights, plus
            ``dino_local``: factor of the local-crop pairs in the DINO CE.
        pack_crops (bool | str): Run student and teacher through the
            backbone's ``forward_packed``: token-wise layers once over the
            tokens of all crop sizes, attention per size. Same values as
            one pass per size, fewer kernel launches: on an H200 the bf16
            ViT-S/14 step at batch 32 is about a quarter faster (see
            docs/en/benchmarks.md). ``'auto'`` (default): packed when the
            crops are on a GPU and the backbone can pack, one pass per size
            on the CPU (where it does not pay).
    """

    #: term name -> key in ``loss_weights`` and in the output ``loss_<key>``
    weight_keys = {name: name for name in TERM_ATTRS}

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
        pack_crops: Union[bool, str] = 'auto',
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, head=head, **kwargs)
        if num_global_crops < 1 or num_gram_crops not in (0, num_global_crops):
            raise ValueError('num_global_crops < 1 or num_gram_crops not 0/G')
        self.num_global_crops = num_global_crops
        self.num_gram_crops = num_gram_crops
        self.teacher_temp = teacher_temp
        if pack_crops not in (True, False, 'auto'):
            raise ValueError(
                "pack_crops must be True, False or 'auto', got "
                f'{pack_crops!r}.'
            )
        if pack_crops is True and not hasattr(self.backbone, 'forward_packed'):
            raise ValueError(
                f'pack_crops=True needs a backbone with forward_packed '
                f'(DINOVisionTransformer, DINOv3ViT), got '
                f'{type(self.backbone).__name__}.'
            )
        self.pack_crops = pack_crops
        self.terms = tuple(terms)
        self.loss_weights = build_terms(
            self, terms, self.weight_keys, loss_weights
        )
        self.patch_head = MODELS.build(patch_head) if patch_head else None
        # Without ibot_patch the mask token gets no gradient, and it stays
        # trainable on purpose: freezing it would drop it from the
        # optimizer, and the optimizer state of earlier checkpoints (one
        # group per parameter) would no longer load on --resume.
        self.build_teachers(gram='gram' in self.terms)

    def packs(self, x: Tensor) -> bool:
        """Whether this step packs the crops (``pack_crops``; ``'auto'``:
        on a GPU, with a backbone that can)."""
        if self.pack_crops == 'auto':
            return x.is_cuda and hasattr(self.backbone, 'forward_packed')
        return bool(self.pack_crops)

    def loss(self, inputs: List[Tensor], data_samples) -> Dict[str, Tensor]:
        """Weighted terms ``dict(loss_<key>=...)`` of one training step,
        plus two log-only values (not summed into the loss), the mean
        entropies relative to ln K of the teacher's DINO targets
        (``dino_target_entropy``) and of the student's predictions
        (``dino_student_entropy``): 1 at the uniform fixed point
        (``UniformCollapseHook``).

        Args:
            inputs (list[Tensor]): Views (B, C, h, w), or volumes
                (B, C, d, h, w) with a 3D backbone (``MultiCrop3D``): G
                global, the local ones, then ``num_gram_crops``
                Gram-teacher crops.
            data_samples (list[DataSample]): ``mask`` (G, Hp, Wp), or
                (G, Dp, Hp, Wp) from ``BlockwiseMaskGenerator3D``, read for
                the ``ibot_patch`` term.
        """
        g, b, temp = self.num_global_crops, len(inputs[0]), self.teacher_temp
        global_x, locals_, gram_x = split_views(inputs, g, self.num_gram_crops)
        masks = index = None  # (G*B, P), True = masked for the student
        if 'ibot_patch' in self.terms:
            masks = global_masks(data_samples, g, global_x.device)
            bound = mask_buffer_size(data_samples)
            if bound is not None:  # fixed-size buffer (U,) of the patches
                index = mask_buffer_index(masks, bound)
        packed = self.packs(global_x)
        with torch.no_grad():
            ((t_cls, t_patch),) = forward_groups(
                self.teacher['backbone'], [global_x], packed=packed
            )
            t_logits, t_patch_logits = self._heads(
                self.teacher, t_cls, masked_tokens(t_patch, masks, index)
            )
        (s_cls_g, s_patch), *s_locals = forward_groups(
            self.backbone,
            [global_x, *locals_],
            [masks] + [None] * len(locals_),
            packed=packed,
        )
        s_cls = torch.cat([s_cls_g] + [c for c, _ in s_locals])  # (V*B, C)
        s_logits, s_patch_logits = self._heads(
            self.student_modules(),
            s_cls,
            masked_tokens(s_patch, masks, index),
        )
        dino, stats = self.dino_loss(
            s_logits.view(-1, b, s_logits.shape[-1]),  # (V, B, K)
            t_logits.view(g, b, -1),  # (G, B, K)
            temp,
            local_weight=self.loss_weights.get('dino_local', 1.0),
            return_stats=True,
        )
        terms = dict(dino_cls=dino)
        if 'ibot_patch' in self.terms:
            terms['ibot_patch'] = self.ibot_loss(
                s_patch_logits, t_patch_logits, masks, temp, index=index
            )
        if 'koleo' in self.terms:  # summed over the global crops (DINOv2)
            cls = s_cls_g.view(g, b, -1)
            terms['koleo'] = sum(self.koleo_loss(cls[i]) for i in range(g))
        if 'gram' in self.terms:
            terms['gram'] = self._gram_term(s_patch, global_x, gram_x)
        keys, w = self.weight_keys, self.loss_weights
        out = {f'loss_{keys[k]}': w[keys[k]] * v for k, v in terms.items()}
        # log-only (no 'loss' in the name: logged, not summed), / ln K
        out.update({f'dino_{name}': v for name, v in stats.items()})
        return out

    def _heads(self, heads, cls: Tensor, patches: Optional[Tensor]):
        """CLS and masked-patch logits (one call when the head is shared)."""
        if patches is None:
            return heads['head'](cls), None
        if 'patch_head' not in heads:
            out = heads['head'](torch.cat([cls, patches]))
            return out[: len(cls)], out[len(cls) :]
        return heads['head'](cls), heads['patch_head'](patches)

    def _gram_term(self, s_patch: Tensor, global_x: Tensor, gram_x) -> Tensor:
        """GramLoss of the student patches (G*B, N, C) against the Gram
        teacher's features of ``gram_x`` (or of the global crops), resized
        to the student's grid; 0 before the first snapshot."""
        if not self._gram_started():
            return s_patch.sum() * 0.0  # GramTeacherHook has not run yet
        x = global_x if gram_x is None else gram_x
        with torch.no_grad():
            _, t_patch = forward_backbone(self.gram_teacher, x)  # (G*B, N', C)
            t_patch = resize_patch_grid(
                t_patch,
                patch_grid(x, t_patch.shape[1]),
                patch_grid(global_x, s_patch.shape[1]),
            )
        return self.gram_loss(s_patch, t_patch)
