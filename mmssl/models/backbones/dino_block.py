# Copyright (c) mmssl contributors. All rights reserved.
"""A ViT block whose stochastic depth skips the dropped samples' work."""

from mmpretrain.models.backbones.vision_transformer import (
    TransformerEncoderLayer,
)
from torch import Tensor, nn

from mmssl.models.utils.drop_path import drop_add_residual


class DINOBlock(TransformerEncoderLayer):
    """mmpretrain's ``TransformerEncoderLayer`` with batch-subset drop path.

    Same sub-modules and state-dict keys as the parent (``ln1``, ``attn``,
    ``ln2``, ``ffn``); only the forward differs: each residual branch
    (attention, then FFN) runs on the samples kept by stochastic depth and
    is added back scaled by ``1 / keep_prob`` (see
    :func:`~mmssl.models.utils.drop_path.drop_add_residual`), instead of
    running on all samples and zeroing the dropped ones.

    Blocks are made by :meth:`adopt` from the layers mmpretrain's
    ``VisionTransformer`` builds, so that every option of its layer configs
    keeps working without rebuilding the layers.
    """

    drop_path_rate: float = 0.0

    @classmethod
    def adopt(
        cls, layer: TransformerEncoderLayer, drop_path_rate: float
    ) -> 'DINOBlock':
        """Turn a built ``TransformerEncoderLayer`` into a ``DINOBlock``.

        The layer's own ``DropPath`` modules (parameter-free) become
        identities and the FFN stops adding its input, because the block
        adds both residuals itself. Parameters are kept as they are.

        Args:
            layer (TransformerEncoderLayer): A freshly built layer.
            drop_path_rate (float): This block's drop rate.

        Returns:
            DINOBlock: The same object, now a ``DINOBlock``.
        """
        if type(layer) is not TransformerEncoderLayer:
            raise TypeError(
                'DINOBlock.adopt expects an mmpretrain '
                f'TransformerEncoderLayer, got {type(layer).__name__}.'
            )
        layer.__class__ = cls
        layer.attn.out_drop = nn.Identity()
        layer.ffn.dropout_layer = nn.Identity()
        layer.ffn.add_identity = False
        layer.drop_path_rate = float(drop_path_rate)
        return layer

    def attn_residual(self, x: Tensor) -> Tensor:
        """Attention branch (B, N, C) -> (B, N, C), LayerScale included."""
        return self.attn(self.ln1(x))

    def ffn_residual(self, x: Tensor) -> Tensor:
        """FFN branch (B, N, C) -> (B, N, C), LayerScale included."""
        return self.ffn(self.ln2(x))

    def forward(self, x: Tensor) -> Tensor:
        """(B, N, C) -> (B, N, C)."""
        p = self.drop_path_rate
        x = drop_add_residual(x, self.attn_residual, p, self.training)
        return drop_add_residual(x, self.ffn_residual, p, self.training)

    def extra_repr(self) -> str:
        return f'drop_path_rate={self.drop_path_rate:g}'
