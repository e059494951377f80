"""SparK whose ``extract_feat`` works on whole, unmasked images."""

import torch
from mmpretrain.models.selfsup import SparK
from mmpretrain.models.utils.sparse_modules import SparseHelper

from mmssl.registry import MODELS


@MODELS.register_module()
class SparKFullImage(SparK):
    """mmpretrain's SparK (Tian et al., ICLR 2023,
    https://arxiv.org/abs/2301.03580) plus feature extraction.

    The sparse backbone reads the active-patch mask that SparK sets during
    ``loss``; outside training there is none and mmpretrain's
    ``extract_feat`` fails. Here every patch is marked active, so
    ``model(x, mode='tensor')`` (kNN evaluation, feature extraction) runs
    the backbone densely. Training is unchanged.
    """

    def extract_feat(self, inputs: torch.Tensor):
        height, width = inputs.shape[-2:]
        SparseHelper._cur_active = inputs.new_ones(
            inputs.shape[0],
            1,
            height // self.downsample_raito,
            width // self.downsample_raito,
            dtype=torch.bool,
        )
        return self.backbone(inputs)
