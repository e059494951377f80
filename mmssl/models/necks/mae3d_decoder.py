"""The lightweight MAE decoder for volumes."""

from typing import Sequence, Union

import torch
import torch.nn as nn
from mmengine.model import BaseModule
from mmpretrain.models.backbones.vision_transformer import (
    TransformerEncoderLayer,
)

from mmssl.registry import MODELS


@MODELS.register_module()
class MAEDecoder3D(BaseModule):
    """Predicts every patch's voxels from the visible encoder tokens.

    Visible tokens are projected to ``decoder_dims``, the masked places
    get a shared mask token, the sequence is put back in patch order,
    a learned position embedding is added, then ``num_layers`` transformer
    blocks, a LayerNorm and a linear layer to ``prod(patch) * in_channels``
    voxels per patch.

    Args:
        in_channels (int | str): Encoder width (``'auto'`` follows the
            backbone).
        num_patches (int): Patches per volume (d * h * w).
        patch_size (int | tuple): Patch size per axis.
        out_channels (int): Volume channels. Defaults to 1.
        decoder_dims (int): Decoder width. Defaults to 128.
        num_layers (int): Decoder blocks. Defaults to 2.
        num_heads (int): Attention heads. Defaults to 4.
        mlp_ratio (float): MLP width ratio. Defaults to 4.
    """

    def __init__(
        self,
        in_channels: int,
        num_patches: int,
        patch_size: Union[int, Sequence[int]],
        out_channels: int = 1,
        decoder_dims: int = 128,
        num_layers: int = 2,
        num_heads: int = 4,
        mlp_ratio: float = 4.0,
        init_cfg=None,
    ) -> None:
        super().__init__(init_cfg)
        if isinstance(patch_size, int):
            patch_size = (patch_size,) * 3
        voxels = int(torch.tensor(patch_size).prod()) * out_channels
        self.num_patches = num_patches
        self.embed = nn.Linear(in_channels, decoder_dims)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_dims))
        self.pos_embed = nn.Parameter(
            torch.zeros(1, num_patches, decoder_dims)
        )
        self.blocks = nn.ModuleList(
            TransformerEncoderLayer(
                embed_dims=decoder_dims,
                num_heads=num_heads,
                feedforward_channels=int(decoder_dims * mlp_ratio),
                qkv_bias=True,
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(decoder_dims)
        self.pred = nn.Linear(decoder_dims, voxels)

    def init_weights(self) -> None:
        super().init_weights()
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.mask_token, std=0.02)

    def forward(
        self, visible: torch.Tensor, restore: torch.Tensor
    ) -> torch.Tensor:
        """Decode.

        Args:
            visible (torch.Tensor): Encoder tokens of the kept patches
                (B, K, C), in the order of ``keep``.
            restore (torch.Tensor): (B, N) permutation from [kept, masked]
                order back to patch order (``random_masking``).

        Returns:
            torch.Tensor: Predicted voxels (B, N, prod(patch) * C_out).
        """
        B, K, _ = visible.shape
        N = restore.shape[1]
        if N != self.num_patches:
            raise ValueError(
                f'MAEDecoder3D was built for {self.num_patches} patches, '
                f'got {N}; set num_patches to the crop grid d * h * w.'
            )
        x = self.embed(visible)  # (B, K, Cd)
        fill = self.mask_token.expand(B, N - K, -1)
        x = torch.cat([x, fill], dim=1)  # (B, N, Cd), [kept, masked]
        x = torch.gather(
            x, 1, restore.unsqueeze(-1).expand(-1, -1, x.shape[-1])
        )
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.pred(self.norm(x))
