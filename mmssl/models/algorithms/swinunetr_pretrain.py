"""Self-supervised pretraining of SwinUNETR's Swin encoder (Tang et al.)."""

from typing import Dict, List, NamedTuple, Optional, Sequence

import torch
import torch.nn.functional as F
from mmpretrain.models.selfsup.base import BaseSelfSupervisor

from mmssl.config.derived_sizes import AUTO, backbone_out_channels
from mmssl.models.utils.volume_pretext import cutout_volumes, random_rotations
from mmssl.registry import MODELS


class PretextBatch(NamedTuple):
    """The augmented views of one step and their targets.

    Attributes:
        inputs (torch.Tensor): (2B, C, D, H, W) rotated and cut views, the
            two views of sample ``k`` in rows ``2k`` and ``2k + 1``.
        rot_labels (torch.Tensor): (2B,) quarter turns applied to each row.
        targets (torch.Tensor): (2B, C, D, H, W) the rotated views before
            the cutout (what the inpainting decoder must give back).
        masks (torch.Tensor): (2B, 1, D, H, W) bool, True = cut out.
    """

    inputs: torch.Tensor
    rot_labels: torch.Tensor
    targets: torch.Tensor
    masks: torch.Tensor


def _with_size(cfg: dict, **sizes) -> dict:
    """A copy of ``cfg`` whose missing or ``'auto'`` sizes are filled."""
    cfg = dict(cfg)
    for key, value in sizes.items():
        if cfg.get(key, AUTO) == AUTO:
            cfg[key] = value
    return cfg


@MODELS.register_module()
class SwinUNETRPretrain(BaseSelfSupervisor):
    """SwinUNETR pretraining (Tang et al., CVPR 2022,
    https://arxiv.org/abs/2111.14791): rotation prediction, contrastive
    coding and masked-volume inpainting on a Swin encoder.

    Two sub-volumes (views) per sample come from the pipeline (e.g.
    ``MultiCrop3D`` with ``num_global=2``). Each view is rotated by a
    random multiple of 90 degrees in ``rot_plane`` and random boxes
    covering ``mask_ratio`` of it are replaced by noise
    (:mod:`mmssl.models.utils.volume_pretext`). The encoder's last output
    (B, C, d, h, w) feeds three heads:

    * rotation: ``rot_head`` (:class:`PretextClsHead`) on the pooled
      feature, cross-entropy against the applied rotation;
    * contrastive: ``neck`` projects the pooled feature, ``con_loss``
      (:class:`NTXentLoss`) pairs the two views of each sample;
    * inpainting: ``decoder`` (:class:`ConvTransposeDecoder3D`) maps the
      feature map back to the voxel grid, L1 against the rotated view
      before the cutout, over the whole volume.

    The loss is ``rot_weight * L_rot + con_weight * L_con + rec_weight *
    L_rec`` (all 1 in the paper), logged as ``loss_rot``, ``loss_con``,
    ``loss_rec``. Unlike the reference code, which feeds the first two
    tokens of the last stage to the rotation and contrastive heads, both
    take the spatial mean, so any input size works.

    Args:
        backbone (dict): A ``SwinViT3D`` (``out_type='featmap'``); its last
            ``out_indices`` entry is used, and is what kNN evaluation pools.
        neck (dict): Contrastive projector, e.g. ``NonLinearNeck`` with
            ``with_avg_pool=False`` and ``in_channels='auto'``.
        rot_head (dict, optional): Rotation classifier. Defaults to a
            ``PretextClsHead`` with ``num_rotations`` classes.
        decoder (dict, optional): Inpainting decoder. Defaults to
            ``ConvTransposeDecoder3D``. Missing or ``'auto'``
            ``in_channels``, ``scale`` and ``out_channels`` follow the
            backbone.
        con_loss (dict, optional): Criterion of the (2B, C) interleaved
            projections. Defaults to ``NTXentLoss`` at temperature 0.5
            (the reference code's).
        num_rotations (int): Rotation classes (quarter turns 0 to
            ``num_rotations - 1``). Defaults to 4.
        rot_plane (Sequence[int]): The two spatial axes of the rotation
            plane; (0, 1) is the axial plane of MONAI's (C, x, y, z)
            volumes (a rotation about z, as in the paper).
        mask_ratio (float): Share of each view cut out. Defaults to 0.3.
        block_size (Sequence[float]): Side range of a cut box, as shares
            of the view's side. Defaults to (0.05, 0.25).
        rot_weight, con_weight, rec_weight (float): Loss weights.
            Default to 1.
        **kwargs: ``BaseSelfSupervisor`` arguments (``data_preprocessor``,
            ``init_cfg``).
    """

    def __init__(
        self,
        backbone: dict,
        neck: dict,
        rot_head: Optional[dict] = None,
        decoder: Optional[dict] = None,
        con_loss: Optional[dict] = None,
        num_rotations: int = 4,
        rot_plane: Sequence[int] = (0, 1),
        mask_ratio: float = 0.3,
        block_size: Sequence[float] = (0.05, 0.25),
        rot_weight: float = 1.0,
        con_weight: float = 1.0,
        rec_weight: float = 1.0,
        **kwargs,
    ) -> None:
        super().__init__(backbone=backbone, neck=neck, **kwargs)
        if not 0.0 <= mask_ratio < 1.0:
            raise ValueError(f'mask_ratio must be in [0, 1), got {mask_ratio}')
        out_type = getattr(self.backbone, 'out_type', 'featmap')
        if out_type != 'featmap':
            raise ValueError(
                f"SwinUNETRPretrain decodes the backbone's feature map; set "
                f"backbone.out_type='featmap', not {out_type!r}."
            )
        channels = self._feature_channels()
        rot_head = rot_head or dict(type='PretextClsHead')
        if rot_head.get('num_classes', num_rotations) != num_rotations:
            raise ValueError(
                f'rot_head.num_classes={rot_head["num_classes"]} differs '
                f'from num_rotations={num_rotations}; drop it from rot_head.'
            )
        self.rot_head = MODELS.build(
            _with_size(
                rot_head, in_channels=channels, num_classes=num_rotations
            )
        )
        decoder = decoder or dict(type='ConvTransposeDecoder3D')
        self.decoder = MODELS.build(
            _with_size(
                decoder,
                in_channels=channels,
                scale=self._stride(),
                out_channels=self._in_channels(),
            )
        )
        self.con_loss = MODELS.build(
            con_loss or dict(type='NTXentLoss', temperature=0.5)
        )
        self.num_rotations = num_rotations
        self.rot_plane = tuple(rot_plane)
        self.mask_ratio = mask_ratio
        self.block_size = tuple(block_size)
        self.weights = dict(rot=rot_weight, con=con_weight, rec=rec_weight)

    def _feature_channels(self) -> int:
        out = getattr(self.backbone, 'out_channels', None)
        if isinstance(out, (list, tuple)) and out:
            return int(out[-1])
        return backbone_out_channels(self.backbone)

    def _stride(self):
        bb = self.backbone
        if hasattr(bb, 'patch_size') and hasattr(bb, 'out_indices'):
            return bb.patch_size * 2 ** bb.out_indices[-1]
        return AUTO  # the decoder config must then give its scale

    def _in_channels(self) -> int:
        convs = self.backbone.modules()
        conv = next(m for m in convs if isinstance(m, torch.nn.Conv3d))
        return conv.in_channels

    def augment(self, views: torch.Tensor) -> PretextBatch:
        """Rotate, then cut out, each row of (2B, C, D, H, W) ``views``."""
        rotated, labels = random_rotations(
            views, self.num_rotations, self.rot_plane
        )
        cut, masks = cutout_volumes(rotated, self.mask_ratio, self.block_size)
        return PretextBatch(cut, labels, rotated, masks)

    def loss(
        self, inputs: List[torch.Tensor], data_samples
    ) -> Dict[str, torch.Tensor]:
        """The three weighted losses of the first two views.

        Args:
            inputs (list[torch.Tensor]): Views, each (B, C, D, H, W).
            data_samples (list): Unused.

        Returns:
            dict: ``loss_rot``, ``loss_con`` and ``loss_rec``, weighted.
        """
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(
                'SwinUNETRPretrain needs two views per sample (e.g. '
                'MultiCrop3D with num_global=2).'
            )
        # (B, 2, C, ...) -> (2B, C, ...): the views of a sample side by side
        views = torch.stack(list(inputs[:2]), dim=1).flatten(0, 1)
        batch = self.augment(views)
        feats = self.backbone(batch.inputs)[-1]  # (2B, C', d, h, w)
        pooled = feats.flatten(2).mean(dim=2)  # (2B, C')
        loss_rot = self.rot_head.loss(pooled, batch.rot_labels)
        z = self.neck((pooled,))[0]  # (2B, C'')
        loss_con = self.con_loss(z)
        recon = self.decoder(feats)  # (2B, C, D, H, W)
        loss_rec = F.l1_loss(recon, batch.targets)
        w = self.weights
        return dict(
            loss_rot=w['rot'] * loss_rot,
            loss_con=w['con'] * loss_con,
            loss_rec=w['rec'] * loss_rec,
        )
