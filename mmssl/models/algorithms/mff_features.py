"""MFF whose ``extract_feat`` returns unmasked features."""

import torch
from mmpretrain.models.backbones import VisionTransformer
from mmpretrain.models.selfsup import MFF

from mmssl.registry import MODELS


@MODELS.register_module()
class MFFFullImage(MFF):
    """mmpretrain's MFF (Liu et al. 2023, https://arxiv.org/abs/2303.16156)
    plus feature extraction on whole images.

    In mmpretrain 1.2, ``MFF.extract_feat`` calls ``MFFViT.forward(x,
    mask=None)``, which hands over to ``MAEViT.forward(x)`` without the
    ``mask`` argument; that one defaults to ``mask=True`` and returns the
    *masked* tuple ``(tokens of 25% of the patches, mask, ids_restore)``, so
    kNN evaluation pooled the random ``ids_restore`` and scored at chance.
    Here the plain ViT forward runs on every patch (output: one
    ``(B, 1 + N, C)`` tensor per ``out_indices`` entry, final norm on the
    last). Training is unchanged.
    """

    def extract_feat(self, inputs: torch.Tensor):
        return VisionTransformer.forward(self.backbone, inputs)
