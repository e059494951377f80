# Copyright (c) mmssl contributors. All rights reserved.
"""Vision Transformer backbone for DINO, iBOT and DINOv2.

Built on mmpretrain's :class:`~mmpretrain.models.VisionTransformer` and adds
what the DINO family of self-supervised methods needs:

- register tokens (Darcet et al., 2023, `Vision Transformers Need
  Registers <https://arxiv.org/abs/2309.16588>`_);
- a learnable mask token replacing masked patch embeddings (Zhou et al.,
  2021, `iBOT <https://arxiv.org/abs/2111.07832>`_; Oquab et al., 2023,
  `DINOv2 <https://arxiv.org/abs/2304.07193>`_);
- DINOv2-style bicubic position-embedding interpolation (scale factor with
  a +0.1 offset, or antialiased size-based resizing) for multi-crop inputs of
  any size, cached per grid size at inference;
- non-reentrant activation checkpointing that is safe under DDP when a block
  runs several times per step (multi-crop students);
- explicit last-block self-attention maps for visualisation.
"""

from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
from mmengine.model.weight_init import trunc_normal_
from mmpretrain.models.backbones import VisionTransformer

from mmssl.models.utils.activation_checkpoint import (
    check_cp_mode,
    checkpoint_block,
)
from mmssl.models.utils.compile_blocks import compile_blocks as _compile_blocks
from mmssl.models.utils.drop_path import drop_path_rates
from mmssl.registry import MODELS

from .dino_block import DINOBlock
from .dino_vit_common import OUT_TYPES, DINOViTMixin, vit_arch
from .dino_vit_pos import DINOv2PosEmbedMixin
from .packed_vit import DINOv2PackingMixin


@MODELS.register_module()
class DINOVisionTransformer(
    DINOv2PackingMixin, DINOViTMixin, DINOv2PosEmbedMixin, VisionTransformer
):
    """ViT with register tokens, mask token and DINOv2 conventions.

    The token sequence fed to the transformer is
    ``[CLS, REG_1..REG_R, PATCH_1..PATCH_N]``. As in DINOv2, the position
    embedding covers the CLS token and the patches only; register tokens are
    inserted after the position embedding is added.

    Args:
        arch (str | dict): ``'tiny'``, ``'small'``, ``'base'``, ``'large'``,
            ``'giant'`` (or ``'t'``, ``'s'``, ``'b'``, ``'l'``, ``'g'``) with
            the DINOv2 sizes, or a dict with ``embed_dims``, ``num_layers``,
            ``num_heads`` and optionally ``feedforward_channels`` (defaults
            to 4x embed_dims) and ``ffn_type`` (``'origin'`` MLP or
            ``'swiglu_fused'`` as used by DINOv2 ViT-g). Defaults to
            ``'small'``.
        img_size (int | tuple): Image size the position embedding grid is
            built for (``img_size // patch_size``). DINOv2 hub models use 518
            (37x37 grid at patch 14). Other input sizes are handled by
            interpolation. Defaults to 224.
        patch_size (int): Patch size, usually 14 or 16. Defaults to 14.
        num_register_tokens (int): Number of register tokens R >= 0.
            Defaults to 0.
        layer_scale_init_value (float): LayerScale init value; 0 disables
            LayerScale. Defaults to 1e-5 (DINOv2).
        drop_path_rate (float): Stochastic depth rate of the last block.
            Only the kept samples run a block's residual branches (see
            :class:`DINOBlock`). Defaults to 0.
        drop_path_schedule (str): ``'linear'`` (rising from 0 in the first
            block to ``drop_path_rate`` in the last) or ``'uniform'`` (the
            same rate in every block, DINOv2's choice for its large
            models). Defaults to ``'linear'``.
        drop_path_mode (str): Which samples a block keeps: ``'bernoulli'``
            (each with probability 1 - rate), ``'fixed'`` (a random subset
            of ``max(floor(B(1 - rate)), 1)``, DINOv2's count) or
            ``'fixed_stochastic'`` (that count with a random rounding, the
            nominal rate in expectation); see
            :mod:`mmssl.models.utils.drop_path`. Defaults to
            ``'bernoulli'``.
        out_type (str): ``'cls_token'`` (B, C), ``'raw'`` (B, 1 + R + N, C),
            ``'featmap'`` (B, C, Hp, Wp) or ``'avg_featmap'`` (B, C, the mean
            of the patch tokens, no extra norm). Defaults to ``'cls_token'``.
        out_indices (int | Sequence[int]): Blocks whose outputs are returned;
            every output goes through the final LayerNorm (as DINOv2's
            ``get_intermediate_layers(norm=True)``). Defaults to -1.
        with_cp (bool | str): Checkpoint each block's activations during
            training (non-reentrant ``torch.utils.checkpoint``): True or
            ``'full'`` recomputes the whole block, ``'selective'`` keeps
            matmul and attention outputs and recomputes the rest (see
            :mod:`mmssl.models.utils.activation_checkpoint`). Defaults to
            False.
        compile_blocks (bool | dict): ``torch.compile`` each block (a dict
            gives ``torch.compile`` arguments); see
            :func:`mmssl.models.utils.compile_blocks`. Defaults to False.
        interpolate_offset (float): Offset added to the target grid size
            before computing the bicubic scale factor, DINOv2's historical
            kludge (0.1 for the original hub models). 0 means resize to the
            exact target size. Defaults to 0.1.
        interpolate_antialias (bool): Antialiased bicubic resizing (DINOv2
            models with registers use ``antialias=True, offset=0``).
            Defaults to False.
        **kwargs: Other arguments of mmpretrain's ``VisionTransformer``
            (``in_channels``, ``drop_rate``, ``qkv_bias``, ``norm_cfg``,
            ``final_norm``, ``frozen_stages``, ``layer_cfgs``, ``init_cfg``,
            ...).
    """

    arch_zoo = {
        **dict.fromkeys(['t', 'tiny'], vit_arch(192, 12, 3)),
        **dict.fromkeys(['s', 'small'], vit_arch(384, 12, 6)),
        **dict.fromkeys(['b', 'base'], vit_arch(768, 12, 12)),
        **dict.fromkeys(['l', 'large'], vit_arch(1024, 24, 16)),
        # DINOv2 ViT-g/14: SwiGLU FFN whose hidden width is
        # (int(6144 * 2 / 3) + 7) // 8 * 8 = 4096 ("swiglufused").
        **dict.fromkeys(
            ['g', 'giant'], vit_arch(1536, 40, 24, ffn_type='swiglu_fused')
        ),
    }
    EMBED_PARAMS = ('cls_token', 'pos_embed', 'register_tokens', 'mask_token')

    def __init__(
        self,
        arch: Union[str, dict] = 'small',
        img_size: Union[int, Tuple[int, int]] = 224,
        patch_size: int = 14,
        num_register_tokens: int = 0,
        layer_scale_init_value: float = 1e-5,
        drop_path_rate: float = 0.0,
        drop_path_schedule: str = 'linear',
        drop_path_mode: str = 'bernoulli',
        out_type: str = 'cls_token',
        out_indices: Union[int, Sequence[int]] = -1,
        with_cp: Union[bool, str] = False,
        compile_blocks: Union[bool, dict] = False,
        interpolate_offset: float = 0.1,
        interpolate_antialias: bool = False,
        layer_cfgs: Union[dict, Sequence[dict]] = dict(),
        **kwargs,
    ) -> None:
        arch_settings = self._resolve_arch(arch)
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
        if kwargs.get('with_cls_token', True) is False:
            raise ValueError(
                'DINOVisionTransformer always has a CLS token; '
                'remove with_cls_token=False.'
            )
        if patch_size <= 0:
            raise ValueError(f'patch_size must be > 0, got {patch_size}.')

        ffn_type = arch_settings.get('ffn_type', 'origin')
        num_layers = arch_settings['num_layers']
        if isinstance(layer_cfgs, dict):
            layer_cfgs = [dict(layer_cfgs) for _ in range(num_layers)]
        layer_cfgs = [{'ffn_type': ffn_type, **cfg} for cfg in layer_cfgs]
        if isinstance(out_indices, int):
            out_indices = [out_indices]
        # The parent adds an extra LayerNorm for 'avg_featmap'; DINOv2 pools
        # the final-normed patch tokens instead, so build it as 'raw'.
        super().__init__(
            arch=arch_settings,
            img_size=img_size,
            patch_size=patch_size,
            drop_path_rate=0.0,  # DINOBlock.adopt sets the rates below
            out_type='raw',
            out_indices=list(out_indices),
            layer_scale_init_value=layer_scale_init_value,
            layer_cfgs=layer_cfgs,
            interpolate_mode='bicubic',
            **kwargs,
        )
        self.out_type = out_type
        self.patch_size = patch_size
        self.with_cp = check_cp_mode(with_cp)
        self.interpolate_offset = interpolate_offset
        self.interpolate_antialias = interpolate_antialias
        self.num_heads = arch_settings['num_heads']

        # Blocks whose stochastic depth skips the dropped samples' work
        # (also for the SwiGLU FFN, which has none in mmpretrain).
        rates = drop_path_rates(drop_path_rate, num_layers, drop_path_schedule)
        for layer, rate in zip(self.layers, rates):
            DINOBlock.adopt(layer, rate, drop_path_mode)

        self.num_register_tokens = num_register_tokens
        # Tokens before the patches in the output sequence: CLS + registers.
        self.num_extra_tokens = 1 + num_register_tokens
        if num_register_tokens > 0:
            self.register_tokens = nn.Parameter(
                torch.zeros(1, num_register_tokens, self.embed_dims)
            )
        else:
            self.register_tokens = None
        self.mask_token = nn.Parameter(torch.zeros(self.embed_dims))
        self._pos_cache: Dict[tuple, torch.Tensor] = {}

        if self.frozen_stages > 0:
            self._freeze_stages()
        _compile_blocks(self.layers, compile_blocks)

    def init_weights(self) -> None:
        """Initialise as DINOv2 (timm ViT init): Linear weights
        trunc-normal(0.02) with zero bias, pos-embed trunc-normal(0.02), CLS
        and register tokens normal(1e-6), mask token zeros."""
        super().init_weights()
        if (
            isinstance(self.init_cfg, dict)
            and self.init_cfg.get('type') == 'Pretrained'
        ):
            return
        if self.init_cfg is None:
            for m in self.modules():
                if isinstance(m, nn.Linear):
                    trunc_normal_(m.weight, std=0.02)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
        trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        if self.register_tokens is not None:
            nn.init.normal_(self.register_tokens, std=1e-6)
        nn.init.zeros_(self.mask_token)

    def train(self, mode: bool = True) -> 'DINOVisionTransformer':
        """Set train/eval mode (re-freezing frozen stages); returns self
        (mmpretrain's BaseBackbone returns None)."""
        super().train(mode)
        if mode and self.frozen_stages > 0:
            self._freeze_stages()
        return self

    def _freeze_stages(self) -> None:
        super()._freeze_stages()
        if not hasattr(self, 'mask_token'):
            return  # called by the parent before the extra tokens exist
        self.mask_token.requires_grad = False
        if self.register_tokens is not None:
            self.register_tokens.requires_grad = False

    # ------------------------------------------------------------------
    # forward
    def prepare_tokens(
        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, Tuple[int, int]]:
        """Patchify, apply the mask token, add pos-embed, insert registers.

        Args:
            x (torch.Tensor): Images (B, C_in, H, W).
            mask (torch.Tensor, optional): Bool mask (B, Hp, Wp) or
                (B, Hp*Wp); True marks patches replaced by ``mask_token``.

        Returns:
            tuple: Tokens (B, 1 + R + N, C) and the patch grid (Hp, Wp).
        """
        B = x.shape[0]
        x, grid = self.patch_embed(x)  # (B, N, C)
        # The residual stream keeps the parameters' dtype: under autocast
        # the patch embedding returns bf16/fp16, and casting the tokens
        # down to it would sum every block's residual in low precision
        # (the reference's torch.cat with the float32 CLS token promotes).
        x = x.to(self.cls_token.dtype)
        x = self._apply_mask_token(x, mask, grid)

        x = torch.cat([self.cls_token.expand(B, -1, -1).to(x.dtype), x], dim=1)
        x = x + self.interpolate_pos_encoding(grid).to(x.dtype)
        if self.register_tokens is not None:
            regs = self.register_tokens.expand(B, -1, -1).to(x.dtype)
            x = torch.cat([x[:, :1], regs, x[:, 1:]], dim=1)
        x = self.drop_after_pos(x)
        x = self.pre_norm(x)
        return x, tuple(grid)

    def _run_layer(self, layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if self.with_cp and self.training and torch.is_grad_enabled():
            # Non-reentrant: DDP-safe when a block runs twice per step.
            return checkpoint_block(layer, x, with_cp=self.with_cp)
        return layer(x)

    def forward(
        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor]:
        """Forward images, optionally masking patches.

        Args:
            x (torch.Tensor): Images (B, C_in, H, W); H and W should be
                multiples of ``patch_size`` (others are padded).
            mask (torch.Tensor, optional): Bool patch mask (B, Hp, Wp) or
                (B, Hp*Wp). Defaults to None.

        Returns:
            tuple[torch.Tensor]: One output per ``out_indices``, formatted by
            ``out_type``.
        """
        x, grid = self.prepare_tokens(x, mask)
        outs = []
        for i, layer in enumerate(self.layers):
            x = self._run_layer(layer, x)
            if i in self.out_indices:
                out = self.ln1(x) if self.final_norm else x
                outs.append(self._format_output(out, grid))
        return tuple(outs)

    @torch.no_grad()
    def get_last_selfattention(
        self, x: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """Softmax attention of the last block, computed explicitly.

        Args:
            x (torch.Tensor): Images (B, C_in, H, W).
            mask (torch.Tensor, optional): Patch mask as in :meth:`forward`.

        Returns:
            torch.Tensor: Attention (B, heads, T, T), T = 1 + R + N; row 0 is
            the CLS query.
        """
        x, _ = self.prepare_tokens(x, mask)
        for layer in self.layers[:-1]:
            x = layer(x)
        last = self.layers[-1]
        attn = last.attn
        y = last.ln1(x)
        B, T, _ = y.shape
        # (B, T, 3C) -> (3, B, heads, T, head_dims)
        qkv = (
            attn.qkv(y)
            .reshape(B, T, 3, attn.num_heads, attn.head_dims)
            .permute(2, 0, 3, 1, 4)
        )
        q, k = qkv[0], qkv[1]
        logits = (q * attn.head_dims**-0.5) @ k.transpose(-2, -1)
        return logits.softmax(dim=-1)


def count_dino_vit_params(
    arch: Union[str, dict] = 'small',
    img_size: int = 518,
    patch_size: int = 14,
    num_register_tokens: int = 0,
    in_channels: int = 3,
) -> int:
    """Count the parameters of a :class:`DINOVisionTransformer` analytically.

    Useful for large presets (ViT-g ~1.1B) without allocating them; it
    matches ``sum(p.numel() for p in model.parameters())``.
    """
    s = DINOVisionTransformer._resolve_arch(arch)
    C, L, hidden = s['embed_dims'], s['num_layers'], s['feedforward_channels']
    grid = (img_size // patch_size) ** 2
    n = C * in_channels * patch_size**2 + C  # patch embed
    n += (1 + grid) * C + C + C + num_register_tokens * C  # pos, cls, mask
    per_block = 2 * 2 * C  # two LayerNorms
    per_block += 3 * C * C + 3 * C + C * C + C  # qkv, proj
    per_block += 2 * C  # two LayerScales
    if s.get('ffn_type', 'origin') == 'swiglu_fused':
        h = (int(hidden * 2 / 3) + 7) // 8 * 8
        per_block += C * 2 * h + 2 * h + h * C + C
    else:
        per_block += C * hidden + hidden + hidden * C + C
    return n + L * per_block + 2 * C  # final norm


__all__: List[str] = ['DINOVisionTransformer', 'count_dino_vit_params']
