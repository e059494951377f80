"""DINO, iBOT and DINOv2: the classic names of DINOFamily configurations.

Each alias takes the constructor arguments it always took and fills in the
terms of :class:`~mmssl.models.algorithms.DINOFamily`; its module names,
``loss_weights`` keys (``dino``, ``ibot``, ``koleo``) and output keys
(``loss_dino``, ...) are those of the earlier classes, so existing configs
and checkpoints load unchanged.
"""

from typing import Optional

from mmssl.registry import MODELS

from .dino_family import DINOFamily

_ALIAS_KEYS = dict(dino_cls='dino', ibot_patch='ibot', koleo='koleo')


@MODELS.register_module()
class DINO(DINOFamily):
    """DINO (Caron et al. 2021, https://arxiv.org/abs/2104.14294).

    ``DINOFamily`` with the ``dino_cls`` term only: the CE between the
    teacher's G global views and the student's G global and L local views.

    Args:
        backbone (dict): Backbone config (a ViT with ``out_type='raw'``, or
            a CNN, e.g. mmpretrain ``ResNet``).
        head (dict): ``DINOHead`` config.
        loss (dict): ``DINOLoss`` config.
        loss_weights (dict, optional): Key ``dino`` (1.0).
        **kwargs: ``num_global_crops``, ``teacher_temp``,
            ``data_preprocessor``, ``init_cfg``: see :class:`DINOFamily`.
    """

    weight_keys = _ALIAS_KEYS

    def __init__(self, backbone: dict, head: dict, loss: dict, **kwargs):
        super().__init__(backbone, head, terms=dict(dino_cls=loss), **kwargs)


@MODELS.register_module()
class iBOT(DINOFamily):
    """iBOT (Zhou et al. 2021, https://arxiv.org/abs/2111.07832).

    ``DINOFamily`` with ``dino_cls`` (on the student CLS of the masked
    global crops, as iBOT and DINOv2) and ``ibot_patch``: for each masked
    patch (``data_sample.mask`` (G, Hp, Wp) from ``BlockwiseMaskGenerator``)
    the student predicts the teacher's output for the unmasked patch.

    Args:
        backbone (dict): ``DINOVisionTransformer`` with ``out_type='raw'``.
        head (dict): ``DINOHead`` config for CLS (and shared patch) tokens.
        loss (dict): ``DINOLoss`` config.
        ibot_loss (dict): ``iBOTPatchLoss`` config.
        patch_head (dict, optional): Separate patch head. Defaults to None.
        loss_weights (dict, optional): Keys ``dino`` (1.0), ``ibot`` (1.0).
        **kwargs: See :class:`DINOFamily`.
    """

    weight_keys = _ALIAS_KEYS

    def __init__(
        self,
        backbone: dict,
        head: dict,
        loss: dict,
        ibot_loss: dict,
        patch_head: Optional[dict] = None,
        **kwargs,
    ) -> None:
        super().__init__(
            backbone,
            head,
            terms=dict(dino_cls=loss, ibot_patch=ibot_loss),
            patch_head=patch_head,
            **kwargs,
        )


@MODELS.register_module()
class DINOv2(DINOFamily):
    """DINOv2 (Oquab et al. 2023, https://arxiv.org/abs/2304.07193).

    :class:`iBOT`'s terms plus the KoLeo regulariser on the student's
    backbone CLS of each global crop, summed over the global crops::

        loss = w_dino * L_dino + w_ibot * L_ibot
               + w_koleo * sum_g KoLeo(student_cls[g])

    Args:
        koleo_loss (dict): ``KoLeoLoss`` config. Defaults to
            ``dict(type='KoLeoLoss')``.
        **kwargs: See :class:`iBOT`; ``loss_weights`` keys ``dino`` (1.0),
            ``ibot`` (1.0), ``koleo`` (0.1).
    """

    weight_keys = _ALIAS_KEYS

    def __init__(
        self,
        backbone: dict,
        head: dict,
        loss: dict,
        ibot_loss: dict,
        patch_head: Optional[dict] = None,
        koleo_loss: dict = dict(type='KoLeoLoss'),
        **kwargs,
    ) -> None:
        terms = dict(
            dino_cls=loss,
            ibot_patch=ibot_loss,
            koleo={'weight': 0.1, **koleo_loss},
        )
        super().__init__(
            backbone, head, terms=terms, patch_head=patch_head, **kwargs
        )
