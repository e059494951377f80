# Copyright (c) mmssl contributors. All rights reserved.
"""What the DINOv2-style and DINOv3 ViT backbones share.

Both order their tokens ``[CLS, REG_1..REG_R, PATCH_1..PATCH_N]``, replace
masked patch embeddings by one learnable mask token
(:mod:`~mmssl.models.layers.mask_token`), run their blocks the same way
(:mod:`.block_stack`), offer the same ``out_type`` formats and number
their depths the same way for layer-wise learning-rate decay.
:class:`DINOViTMixin` holds these once; each backbone names its depth-0
parameters in ``EMBED_PARAMS``.
"""

from typing import List, Optional, Tuple, Union

import torch
from torch import Tensor

from mmssl.models.layers.mask_token import apply_mask_token

from .block_stack import BlockStackMixin

ARCH_KEYS = {'embed_dims', 'num_layers', 'num_heads'}
OUT_TYPES = {'raw', 'cls_token', 'featmap', 'avg_featmap'}


def vit_arch(C: int, L: int, H: int, ratio: float = 4, **extra) -> dict:
    """An ``arch_zoo`` entry: width ``C``, ``L`` blocks, ``H`` heads and
    an FFN ``ratio`` times as wide as the tokens."""
    return dict(
        embed_dims=C,
        num_layers=L,
        num_heads=H,
        feedforward_channels=int(C * ratio),
        **extra,
    )


class DINOViTMixin(BlockStackMixin):
    """Arch lookup, masked patch embedding, output formats and layer
    depths; the forward passes of :class:`BlockStackMixin`.

    The class using it has ``arch_zoo``, ``patch_embed``, ``cls_token``,
    ``mask_token``, ``out_type``, ``num_extra_tokens`` and
    ``num_layers``, and lists the names of its embedding parameters
    (depth 0) in ``EMBED_PARAMS``.
    """

    EMBED_PARAMS: Tuple[str, ...] = (
        'cls_token',
        'register_tokens',
        'mask_token',
    )

    @classmethod
    def _resolve_arch(cls, arch: Union[str, dict]) -> dict:
        if isinstance(arch, str):
            key = arch.lower()
            if key not in cls.arch_zoo:
                raise ValueError(
                    f'Unknown arch {arch!r}; choose from '
                    f'{sorted(set(cls.arch_zoo))} or pass a dict with keys '
                    f'{sorted(ARCH_KEYS)}.'
                )
            return dict(cls.arch_zoo[key])
        if not isinstance(arch, dict) or not ARCH_KEYS <= set(arch):
            raise ValueError(
                f'A custom arch must be a dict with keys '
                f'{sorted(ARCH_KEYS)}, got {arch!r}.'
            )
        settings = dict(arch)
        settings.setdefault('feedforward_channels', 4 * settings['embed_dims'])
        return settings

    @classmethod
    def _check_args(
        cls, arch, num_register_tokens, out_type, with_cls_token, patch_size
    ) -> dict:
        """The arch settings, after checking the other arguments."""
        if not isinstance(num_register_tokens, int) or num_register_tokens < 0:
            raise ValueError(
                'num_register_tokens must be an int >= 0, got '
                f'{num_register_tokens!r}.'
            )
        if out_type not in OUT_TYPES:
            raise ValueError(
                f'Unsupported out_type {out_type!r}; choose '
                f'from {sorted(OUT_TYPES)}.'
            )
        if with_cls_token is False:
            raise ValueError(
                f'{cls.__name__} always has a CLS token; '
                'remove with_cls_token=False.'
            )
        if patch_size <= 0:
            raise ValueError(f'patch_size must be > 0, got {patch_size}.')
        return cls._resolve_arch(arch)

    @staticmethod
    def _check_out_indices(out_indices, num_layers: int) -> List[int]:
        if isinstance(out_indices, int):
            out_indices = [out_indices]
        out = [i + num_layers if i < 0 else i for i in out_indices]
        if not all(0 <= i < num_layers for i in out):
            raise ValueError(
                f'out_indices {list(out_indices)} out of range for '
                f'{num_layers} blocks.'
            )
        return out

    def _embed_patches(
        self, x: Tensor, mask: Optional[Tensor]
    ) -> Tuple[Tensor, Tuple[int, int]]:
        """Patch embeddings (B, N, C), masked patches replaced by the mask
        token, and the patch grid (Hp, Wp) of images (B, C_in, H, W)."""
        x, grid = self.patch_embed(x)  # (B, N, C)
        # The residual stream keeps the parameters' dtype: under autocast
        # the patch embedding returns bf16/fp16, and casting the tokens
        # down to it would sum every block's residual in low precision
        # (the reference's torch.cat with the float32 CLS token promotes).
        x = x.to(self.cls_token.dtype)
        keep = (
            self.training
            and torch.is_grad_enabled()
            and self.mask_token.requires_grad
        )
        return apply_mask_token(x, mask, self.mask_token, grid, keep), grid

    def _format_output(self, x: Tensor, hw: Tuple[int, int]) -> Tensor:
        if self.out_type == 'raw':
            return x  # (B, 1 + R + N, C)
        if self.out_type == 'cls_token':
            return x[:, 0]  # (B, C)
        patch = x[:, self.num_extra_tokens :]  # (B, N, C)
        if self.out_type == 'featmap':
            # (B, N, C) -> (B, Hp, Wp, C) -> (B, C, Hp, Wp)
            return patch.reshape(x.shape[0], *hw, -1).permute(0, 3, 1, 2)
        return patch.mean(dim=1)  # 'avg_featmap': (B, C)

    def get_layer_depth(
        self, param_name: str, prefix: str = ''
    ) -> Tuple[int, int]:
        """Layer depth of a parameter for layer-wise lr decay.

        The embedding parameters (``EMBED_PARAMS`` and the patch
        embedding) are depth 0, block ``i`` is depth ``i + 1`` and
        everything else (final norms, heads) the top depth ``num_layers +
        1``. With mmpretrain's ``LearningRateDecayOptimWrapperConstructor``
        the lr scale is ``decay ** (num_layers + 1 - depth)``, DINOv2's
        rule.

        Returns:
            tuple[int, int]: (depth, number of depths = num_layers + 2).
        """
        num_depths = self.num_layers + 2
        if not param_name.startswith(prefix):
            return num_depths - 1, num_depths
        name = param_name[len(prefix) :]
        if name in self.EMBED_PARAMS or name.startswith('patch_embed'):
            return 0, num_depths
        if name.startswith('layers.'):
            return int(name.split('.')[1]) + 1, num_depths
        return num_depths - 1, num_depths
