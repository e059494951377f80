"""A two-normalisation data preprocessor that also takes single images."""

import torch
from mmpretrain.models.utils.data_preprocessor import (
    SelfSupDataPreprocessor,
    TwoNormDataPreprocessor,
)

from mmssl.registry import MODELS


@MODELS.register_module()
class TwoNormOrSingleDataPreprocessor(TwoNormDataPreprocessor):
    """mmpretrain's ``TwoNormDataPreprocessor`` for (image, target image)
    pairs, plus plain single-image batches.

    BEiT and CAE train on two views normalised differently (the second feeds
    the tokenizer). Feature extraction and kNN evaluation feed one stacked
    (B, C, H, W) batch, which mmpretrain's class iterates over as if it were
    the pair and silently mangles. Here such a batch is normalised with the
    first ``mean``/``std``, exactly as ``SelfSupDataPreprocessor`` would.
    """

    def forward(self, data: dict, training: bool = False) -> dict:
        inputs = data['inputs']
        if (
            isinstance(inputs, (list, tuple))
            and len(inputs) == 2
            and all(
                isinstance(x, torch.Tensor) and x.dim() == 4 for x in inputs
            )
        ):
            return super().forward(data, training)
        # one image per sample: behave like SelfSupDataPreprocessor
        return SelfSupDataPreprocessor.forward(self, data, training)
