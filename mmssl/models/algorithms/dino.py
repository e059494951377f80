"""DINO: self-distillation with no labels (student / EMA teacher)."""

import copy
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from mmengine.model import BaseModule
from mmpretrain.models.selfsup import BaseSelfSupervisor
from mmpretrain.structures import DataSample
from torch import Tensor, nn

from mmssl.checkpoint.warm_start import apply_warm_start
from mmssl.registry import MODELS


def _strip_for_teacher(module: nn.Module) -> nn.Module:
    """Teacher copy: no gradients, no stochastic depth / dropout, no
    activation checkpointing, no pretrained re-initialisation."""
    for m in module.modules():
        if hasattr(m, 'drop_prob'):  # DropPath (mmcv, timm)
            m.drop_prob = 0.0
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if hasattr(m, 'with_cp'):
            m.with_cp = False
        if isinstance(m, BaseModule):
            m.init_cfg = None
    for p in module.parameters():
        p.requires_grad_(False)
    return module


@MODELS.register_module()
class DINO(BaseSelfSupervisor):
    """DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294).

    The student (``backbone`` + ``head``) sees G global and L local crops;
    the teacher, an EMA copy of the student updated by ``TeacherEMAHook``,
    sees the G global crops only and gives the targets of ``DINOLoss``
    (cross-entropy over all teacher/student view pairs of different views).

    The student runs all global crops in one forward pass (concatenated on
    the batch axis) and all local crops in one more (one per distinct local
    size); the head runs once on all CLS features.

    Backbone outputs understood: ViT tokens (B, 1 + R + N, C) (``out_type=
    'raw'``; CLS first, then ``backbone.num_extra_tokens - 1`` registers,
    then patches), CLS features (B, C), or CNN maps (B, C, H, W) (global
    average pooled, e.g. mmpretrain ``ResNet``).

    Schedules live in hooks: ``TeacherEMAHook`` (momentum, and the EMA update
    itself), ``TeacherTempWarmupHook`` (sets :attr:`teacher_temp`),
    ``FreezeLastLayerHook``.

    Args:
        backbone (dict): Backbone config.
        head (dict): ``DINOHead`` config for the CLS features.
        loss (dict): ``DINOLoss`` config.
        num_global_crops (int): G, the first G views of ``inputs``.
            Defaults to 2.
        teacher_temp (float): Initial teacher temperature (the warmup hook
            overwrites it every iteration). Defaults to 0.04.
        loss_weights (dict, optional): Weights of the loss terms, keys
            ``dino`` (and ``ibot``, ``koleo`` in subclasses).
        warm_start (dict, optional): Start student and teacher from a
            checkpoint after initialisation, e.g. ``dict(checkpoint=
            'dinov2_vits14.pth', format='auto')``; see
            :func:`mmssl.checkpoint.warm_start.apply_warm_start` and
            docs/en/warm_start.md. Defaults to None.
        data_preprocessor (dict, optional): Data preprocessor config.
        init_cfg (dict, optional): Init config.
    """

    default_loss_weights = dict(dino=1.0)

    def __init__(
        self,
        backbone: dict,
        head: dict,
        loss: dict,
        num_global_crops: int = 2,
        teacher_temp: float = 0.04,
        loss_weights: Optional[dict] = None,
        data_preprocessor: Optional[dict] = None,
        init_cfg: Optional[dict] = None,
        warm_start: Optional[dict] = None,
        **kwargs,
    ) -> None:
        super().__init__(
            backbone=backbone,
            head=head,
            data_preprocessor=data_preprocessor,
            init_cfg=init_cfg,
            **kwargs,
        )
        if num_global_crops < 1:
            raise ValueError(
                f'num_global_crops must be >= 1, got {num_global_crops}.'
            )
        self.num_global_crops = num_global_crops
        self.warm_start = warm_start
        self.teacher_temp = teacher_temp
        self.loss_weights = dict(self.default_loss_weights)
        unknown = set(loss_weights or {}) - set(self.loss_weights)
        if unknown:
            raise ValueError(
                f'Unknown loss_weights keys {sorted(unknown)}; '
                f'{type(self).__name__} has '
                f'{sorted(self.loss_weights)}.'
            )
        self.loss_weights.update(loss_weights or {})
        self.dino_loss = MODELS.build(loss)
        self._build_extra()
        self.teacher = nn.ModuleDict(
            {
                name: _strip_for_teacher(copy.deepcopy(module))
                for name, module in self._student_modules().items()
            }
        )

    # ----------------------------------------------------------- structure
    def _build_extra(self) -> None:
        """Hook for subclasses to build more student modules / losses."""

    def _student_modules(self) -> Dict[str, nn.Module]:
        """Student modules that have an EMA twin in ``self.teacher``."""
        return dict(backbone=self.backbone, head=self.head)

    def init_weights(self) -> None:
        """Initialise the student, then start the teacher from it."""
        super().init_weights()
        for name, module in self._student_modules().items():
            self.teacher[name].load_state_dict(module.state_dict())
        if self.warm_start:
            apply_warm_start(self, self.warm_start)

    @torch.no_grad()
    def update_teacher(self, momentum: float) -> None:
        """EMA step: ``teacher = m * teacher + (1 - m) * student``."""
        for name, module in self._student_modules().items():
            t_params = list(self.teacher[name].parameters())
            s_params = [p.detach() for p in module.parameters()]
            torch._foreach_mul_(t_params, momentum)
            torch._foreach_add_(t_params, s_params, alpha=1.0 - momentum)

    # ------------------------------------------------------------- helpers
    @staticmethod
    def _forward_backbone(
        backbone: nn.Module, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tuple[Tensor, Optional[Tensor]]:
        """Run a backbone; return CLS (B, C) and patch tokens (B, N, C)."""
        out = backbone(x) if mask is None else backbone(x, mask=mask)
        if isinstance(out, (list, tuple)):
            out = out[-1]
        if out.dim() == 4:  # CNN feature map
            return out.mean(dim=(2, 3)), None
        if out.dim() == 2:  # CLS feature
            return out, None
        if out.dim() == 3:  # tokens: CLS, registers, patches
            num_extra = getattr(backbone, 'num_extra_tokens', 1)
            return out[:, 0], out[:, num_extra:]
        raise ValueError(f'Unsupported backbone output {tuple(out.shape)}.')

    def _split_views(
        self, inputs: List[Tensor]
    ) -> Tuple[Tensor, List[Tensor]]:
        """Global crops concatenated (G*B, 3, H, W) and the local groups."""
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(
                'DINO-style training needs a list of views '
                '(use the MultiCrop transform).'
            )
        num_g = self.num_global_crops
        if len(inputs) < num_g or len(inputs) < 2:
            raise ValueError(
                f'Got {len(inputs)} views but num_global_crops={num_g}; '
                'DINO needs the G global crops first and at least 2 views.'
            )
        global_x = torch.cat(list(inputs[:num_g]))  # (G*B, 3, H, W)
        groups: List[List[Tensor]] = []
        for view in inputs[num_g:]:  # same-size local crops go together
            if groups and groups[-1][0].shape == view.shape:
                groups[-1].append(view)
            else:
                groups.append([view])
        return global_x, [torch.cat(g) for g in groups]

    def _student_local_cls(self, local_groups: Sequence[Tensor]) -> Tensor:
        """CLS features (L*B, C) of all local crops."""
        feats = [
            self._forward_backbone(self.backbone, x)[0] for x in local_groups
        ]
        if not feats:
            return None
        return torch.cat(feats)

    def extract_feat(self, inputs) -> Tensor:
        """Teacher backbone CLS / pooled features (B, C), used for kNN."""
        if isinstance(inputs, (list, tuple)):
            inputs = inputs[0]
        with torch.no_grad():
            return self._forward_backbone(self.teacher['backbone'], inputs)[0]

    # ---------------------------------------------------------------- loss
    def loss(
        self, inputs: List[Tensor], data_samples: List[DataSample]
    ) -> Dict[str, Tensor]:
        """DINO loss.

        Args:
            inputs (list[Tensor]): V views (B, 3, h, w), G global first.
            data_samples (list[DataSample]): Unused by DINO.

        Returns:
            dict: ``loss_dino``.
        """
        global_x, local_groups = self._split_views(inputs)
        num_g, batch = self.num_global_crops, inputs[0].shape[0]
        with torch.no_grad():
            t_cls, _ = self._forward_backbone(
                self.teacher['backbone'], global_x
            )
            t_logits = self.teacher['head'](t_cls)  # (G*B, K)
        s_cls_g, _ = self._forward_backbone(self.backbone, global_x)
        s_cls = [s_cls_g]
        s_cls_l = self._student_local_cls(local_groups)
        if s_cls_l is not None:
            s_cls.append(s_cls_l)
        s_logits = self.head(torch.cat(s_cls))  # (V*B, K)
        loss = self.dino_loss(
            s_logits.view(-1, batch, s_logits.shape[-1]),
            t_logits.view(num_g, batch, -1),
            self.teacher_temp,
        )
        return dict(loss_dino=self.loss_weights['dino'] * loss)
