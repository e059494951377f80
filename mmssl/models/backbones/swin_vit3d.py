# Copyright (c) mmssl contributors. All rights reserved.
"""MONAI's SwinUNETR encoder (``SwinViT``) as an mmssl backbone.

Tang et al., 2022, `Self-Supervised Pre-Training of Swin Transformers for
3D Medical Image Analysis <https://arxiv.org/abs/2111.14791>`_; Hatamizadeh
et al., 2022, `Swin UNETR <https://arxiv.org/abs/2201.01266>`_.

The encoder is MONAI's own ``monai.networks.nets.swin_unetr.SwinTransformer``
built with the arguments ``SwinUNETR`` gives it, held as ``self.swinViT``,
so its weights are those of ``SwinUNETR(...).swinViT`` key for key
(``tools/model_converters/mmssl_to_monai_swinunetr.py`` strips the prefix).
"""

from typing import Sequence, Tuple, Union

import torch
from mmengine.model import BaseModule

from mmssl.extras import require_3d
from mmssl.registry import MODELS

#: A key only this backbone's weights have (after the backbone prefix).
SWIN_VIT_MARKER = 'swinViT.patch_embed.proj.weight'


@MODELS.register_module()
class SwinViT3D(BaseModule):
    """The Swin transformer encoder of MONAI's SwinUNETR.

    Args:
        in_channels (int): Input channels. Defaults to 1.
        feature_size (int): Width of the first stage (``embed_dim``); the
            stages have 1, 2, 4, 8 and 16 times it. SwinUNETR requires a
            multiple of 12. Defaults to 48.
        depths (Sequence[int]): Blocks per stage. Defaults to (2, 2, 2, 2).
        num_heads (Sequence[int]): Heads per stage. Defaults to
            (3, 6, 12, 24).
        window_size (int): Attention window per axis. Defaults to 7.
        patch_size (int): Patch size per axis. Defaults to 2.
        mlp_ratio (float): MLP width ratio. Defaults to 4.
        qkv_bias (bool): Defaults to True.
        drop_rate, attn_drop_rate, drop_path_rate (float): Dropouts.
        normalize (bool): Instance-normalise each stage output (as
            SwinUNETR does). Defaults to True.
        use_v2 (bool): SwinUNETR-v2 residual conv blocks. Defaults to
            False.
        with_cp (bool): Activation checkpointing of every Swin block
            (MONAI's ``use_checkpoint``: non-reentrant, DDP-safe).
            Defaults to False.
        out_indices (Sequence[int]): Which of the five outputs (0: patch
            embedding, 1-4: stages) to return. Defaults to (4,).
        out_type (str): ``'featmap'`` (B, C, D', H', W') or
            ``'avg_featmap'`` (B, C), global average pooling. Defaults to
            ``'featmap'``.
        init_cfg (dict, optional): mmengine init config.

    Inputs must have sides divisible by ``patch_size * 16`` (32 by
    default).
    """

    OUT_TYPES = ('featmap', 'avg_featmap')

    def __init__(
        self,
        in_channels: int = 1,
        feature_size: int = 48,
        depths: Sequence[int] = (2, 2, 2, 2),
        num_heads: Sequence[int] = (3, 6, 12, 24),
        window_size: int = 7,
        patch_size: int = 2,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.0,
        normalize: bool = True,
        use_v2: bool = False,
        with_cp: bool = False,
        out_indices: Union[int, Sequence[int]] = (4,),
        out_type: str = 'featmap',
        init_cfg: Union[dict, None] = None,
    ) -> None:
        require_3d('SwinViT3D')
        from monai.networks.nets.swin_unetr import SwinTransformer

        super().__init__(init_cfg)
        if out_type not in self.OUT_TYPES:
            raise ValueError(
                f'out_type must be one of {self.OUT_TYPES}, got {out_type!r}.'
            )
        if isinstance(out_indices, int):
            out_indices = (out_indices,)
        bad = [i for i in out_indices if not -5 <= i <= 4]
        if bad:
            raise ValueError(f'out_indices must be in [0, 4], got {bad}.')
        self.out_indices = tuple(i % 5 for i in out_indices)
        self.out_type = out_type
        self.normalize = normalize
        self.patch_size = patch_size
        self.feature_size = feature_size
        self.swinViT = SwinTransformer(
            in_chans=in_channels,
            embed_dim=feature_size,
            window_size=(window_size,) * 3,
            patch_size=(patch_size,) * 3,
            depths=tuple(depths),
            num_heads=tuple(num_heads),
            mlp_ratio=mlp_ratio,
            qkv_bias=qkv_bias,
            drop_rate=drop_rate,
            attn_drop_rate=attn_drop_rate,
            drop_path_rate=drop_path_rate,
            use_checkpoint=with_cp,
            spatial_dims=3,
            use_v2=use_v2,
        )

    @property
    def with_cp(self) -> bool:
        """Whether the Swin blocks checkpoint their activations."""
        return self._blocks()[0].use_checkpoint

    @with_cp.setter
    def with_cp(self, value: bool) -> None:
        for block in self._blocks():
            block.use_checkpoint = bool(value)

    def _blocks(self) -> list:
        return [
            m for m in self.swinViT.modules() if hasattr(m, 'use_checkpoint')
        ]

    @property
    def out_channels(self) -> Tuple[int, ...]:
        """Channels of each returned output."""
        return tuple(self.feature_size * 2**i for i in self.out_indices)

    @property
    def num_features(self) -> int:
        """Channels of the last returned output (what ``'auto'`` neck
        sizes follow)."""
        return self.out_channels[-1]

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """Encode volumes.

        Args:
            x (torch.Tensor): (B, C_in, D, H, W), sides divisible by
                ``patch_size * 16``.

        Returns:
            tuple[torch.Tensor]: One output per ``out_indices``:
            (B, feature_size * 2**i, D / (p * 2**i), ...) feature maps, or
            their spatial means (B, C) for ``'avg_featmap'``.
        """
        div = self.patch_size * 16
        if x.dim() != 5 or any(s % div for s in x.shape[2:]):
            raise ValueError(
                f'SwinViT3D expects (B, C, D, H, W) with sides divisible '
                f'by {div}, got {tuple(x.shape)}.'
            )
        hidden = self.swinViT(x, self.normalize)
        outs = []
        for i in self.out_indices:
            out = hidden[i]
            if self.out_type == 'avg_featmap':
                out = out.mean(dim=(2, 3, 4))  # (B, C)
            outs.append(out)
        return tuple(outs)


__all__ = ['SwinViT3D', 'SWIN_VIT_MARKER']
