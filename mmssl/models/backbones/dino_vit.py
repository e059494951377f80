# Copyright (c) mmssl contributors. All rights reserved.
"""Vision Transformer backbone for DINO, iBOT and DINOv2.

:class:`~mmssl.models.backbones.base_vit.BaseViT` with a padded patch
embedding, a learned position embedding over CLS and patches, register
tokens (Darcet et al., 2023, `arXiv:2309.16588
<https://arxiv.org/abs/2309.16588>`_), a stack of
:class:`~mmssl.models.layers.DINOBlock` each built with its own
stochastic depth rate, and a final norm, with the parameter names of
mmpretrain's ``VisionTransformer``. Crops of any size: DINOv2's
position-embedding interpolation (`arXiv:2304.07193
<https://arxiv.org/abs/2304.07193>`_), cached per grid when no gradient
flows into it, also for a loaded checkpoint of another grid.
"""

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
from mmengine.logging import MMLogger
from mmengine.model import ModuleList
from mmengine.model.weight_init import trunc_normal_
from mmpretrain.models.utils import build_norm_layer

from mmssl.checkpoint.layouts.pos_embed import resize_pos_embed
from mmssl.models.layers import DINOBlock
from mmssl.models.layers.drop_path import drop_path_rates
from mmssl.models.layers.patch_embed import PatchEmbed, to_ntuple
from mmssl.models.utils.compile_blocks import compile_blocks as _compile_blocks
from mmssl.registry import MODELS

from .base_vit import BaseViT, vit_arch


@MODELS.register_module()
class DINOVisionTransformer(BaseViT):
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
        in_channels (int): Image channels. Defaults to 3.
        drop_path_rate (float): Stochastic depth rate of the last block.
            Only the kept samples run a block's residual branches (see
            :class:`~mmssl.models.layers.DINOBlock`). Defaults to 0.
        drop_path_schedule (str): ``'linear'`` (rising from 0 in the first
            block to ``drop_path_rate`` in the last) or ``'uniform'`` (the
            same rate in every block, DINOv2's choice for its large
            models). Defaults to ``'linear'``.
        drop_path_mode (str): Which samples a block keeps: ``'static'``
            (fixed shapes, exact rate; the DINO configs), ``'bernoulli'``,
            ``'fixed'`` or ``'fixed_stochastic'``; see
            :mod:`mmssl.models.layers.drop_path`. Defaults to
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
        compile_blocks (bool | dict): ``torch.compile`` each whole block (a
            dict gives ``torch.compile`` arguments); see
            :func:`mmssl.models.utils.compile_blocks`. Defaults to False.
        interpolate_offset (float): Offset added to the target grid size
            before computing the bicubic scale factor, DINOv2's historical
            kludge (0.1 for the original hub models). 0 means resize to the
            exact target size. Defaults to 0.1.
        interpolate_antialias (bool): Antialiased bicubic resizing (DINOv2
            models with registers use ``antialias=True, offset=0``).
            Defaults to False.
        drop_rate (float): Dropout after the position embedding and in the
            blocks. Defaults to 0.
        qkv_bias (bool): Bias of the qkv projections. Defaults to True.
        norm_cfg (dict): Norm layers. Defaults to LayerNorm, eps 1e-6.
        final_norm (bool): Norm the returned tokens. Defaults to True.
        frozen_stages (int): Freeze the embeddings and the first
            ``frozen_stages`` blocks (the final norm too when all are).
            Defaults to -1.
        pre_norm (bool): A norm before the first block (CLIP style; the
            patch embedding then has no bias). Defaults to False.
        patch_cfg (dict): Overrides of the
            :class:`~mmssl.models.layers.PatchEmbed` arguments ``pad``
            (True: pad sides to a multiple of the patch) and ``bias``.
        layer_cfgs (dict | Sequence[dict]): Overrides of the
            :class:`~mmssl.models.layers.DINOBlock` arguments, one dict
            for all blocks or one per block.
        init_cfg (dict, optional): mmengine initialisation config.
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

    #: 2: images; the 3D ViT sets 3.
    spatial_dims = 2

    def __init__(
        self,
        arch: Union[str, dict] = 'small',
        img_size: Union[int, Tuple[int, int]] = 224,
        patch_size: int = 14,
        in_channels: int = 3,
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
        drop_rate: float = 0.0,
        qkv_bias: bool = True,
        norm_cfg: dict = dict(type='LN', eps=1e-6),
        final_norm: bool = True,
        frozen_stages: int = -1,
        pre_norm: bool = False,
        patch_cfg: dict = dict(),
        layer_cfgs: Union[dict, Sequence[dict]] = dict(),
        with_cls_token: bool = True,
        init_cfg: Optional[dict] = None,
    ) -> None:
        super().__init__(
            arch,
            num_register_tokens,
            out_type,
            out_indices,
            final_norm,
            with_cp,
            init_cfg,
        )
        if with_cls_token is False:
            raise ValueError(
                f'{type(self).__name__} always has a CLS token; '
                'remove with_cls_token=False.'
            )
        s, C, L = self.arch_settings, self.embed_dims, self.num_layers
        self.img_size = to_ntuple(img_size, self.spatial_dims, 'img_size')
        self.patch_size = patch_size
        self.in_channels = in_channels
        self.frozen_stages = frozen_stages
        self.interpolate_offset = interpolate_offset
        self.interpolate_antialias = interpolate_antialias

        # Patch embedding, then CLS, position, register and mask tokens.
        self.patch_embed = self._build_patch_embed(
            in_channels, patch_size, pre_norm, patch_cfg
        )
        self.patch_resolution = self.patch_embed.grid(self.img_size)
        self._build_tokens(1 + math.prod(self.patch_resolution))
        self._register_load_state_dict_pre_hook(self._prepare_pos_embed)
        self._pos_cache: Dict[tuple, torch.Tensor] = {}
        self.drop_after_pos = nn.Dropout(p=drop_rate)

        # Blocks, each built with its own stochastic depth rate.
        rates = drop_path_rates(drop_path_rate, L, drop_path_schedule)
        if isinstance(layer_cfgs, dict):
            layer_cfgs = [layer_cfgs] * L
        block = dict(
            embed_dims=C,
            num_heads=self.num_heads,
            feedforward_channels=s['feedforward_channels'],
            ffn_type=s.get('ffn_type', 'origin'),
            drop_path_mode=drop_path_mode,
            layer_scale_init_value=layer_scale_init_value,
            drop_rate=drop_rate,
            qkv_bias=qkv_bias,
            norm_cfg=norm_cfg,
        )
        self.layers = ModuleList(
            DINOBlock(**{**block, 'drop_path_rate': rate, **cfg})
            for rate, cfg in zip(rates, layer_cfgs)
        )
        self.pre_norm = (
            build_norm_layer(norm_cfg, C) if pre_norm else nn.Identity()
        )
        if final_norm:
            self.ln1 = build_norm_layer(norm_cfg, C)

        if self.frozen_stages > 0:
            self._freeze_stages()
        _compile_blocks(self.layers, compile_blocks)

    def _build_patch_embed(
        self, in_channels: int, patch_size, pre_norm: bool, patch_cfg: dict
    ) -> PatchEmbed:
        """Padded patches; no bias before a pre-norm (CLIP style)."""
        bad = sorted(set(patch_cfg) - {'pad', 'bias'})
        if bad:
            raise ValueError(
                f'patch_cfg keys {bad} are not PatchEmbed arguments: give '
                'pad or bias (kernel and stride are patch_size).'
            )
        cfg = {'pad': True, 'bias': not pre_norm, **patch_cfg}
        return PatchEmbed(
            in_channels, self.embed_dims, patch_size, self.spatial_dims, **cfg
        )

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
        # This first draw is overwritten below; it keeps the place of the
        # Linear draws in the RNG stream, so a seed gives the weights it
        # has always given (tests/data/vit_outputs.pt).
        trunc_normal_(self.pos_embed, std=0.02)
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
        """Set train/eval mode (re-freezing frozen stages); returns self."""
        super().train(mode)
        if mode and self.frozen_stages > 0:
            self._freeze_stages()
        return self

    def _freeze_stages(self) -> None:
        """Freeze the embeddings and the first ``frozen_stages`` blocks
        (and the final norm when they are all the blocks)."""
        frozen = [self.patch_embed, self.drop_after_pos, self.pre_norm]
        frozen += list(self.layers[: self.frozen_stages])
        if self.frozen_stages >= len(self.layers) and self.final_norm:
            frozen.append(self.ln1)
        for m in frozen:
            m.eval()
            for p in m.parameters():
                p.requires_grad = False
        for p in (self.cls_token, self.pos_embed, self.mask_token):
            p.requires_grad = False
        if self.register_tokens is not None:
            self.register_tokens.requires_grad = False

    # ------------------------------------------------------------------
    # position embedding at any grid
    def _interpolate_pos_embed(
        self, pos_embed: torch.Tensor, grid: tuple
    ) -> torch.Tensor:
        """Resize ``pos_embed`` (1, 1 + M*M', C) to ``grid`` as DINOv2
        does: with ``interpolate_offset > 0`` bicubic with
        ``scale_factor=((h + offset) / M, (w + offset) / M')`` (the
        original hub models), else to the exact size, optionally
        antialiased."""
        return resize_pos_embed(
            pos_embed,
            grid,
            src_grid=self.patch_resolution,
            offset=self.interpolate_offset,
            antialias=self.interpolate_antialias,
        )

    def interpolate_pos_encoding(self, grid: tuple) -> torch.Tensor:
        """Position embedding (1, 1 + N, C) for a ``grid`` of patches.

        Cached per grid when no gradient flows into the embedding
        (evaluation, the frozen teacher); the key holds the parameter's
        version, so in-place updates (EMA) invalidate it.
        """
        pos_embed = self.pos_embed
        if torch.is_grad_enabled() and pos_embed.requires_grad:
            return self._interpolate_pos_embed(pos_embed, grid)
        key = (
            tuple(grid),
            pos_embed._version,
            pos_embed.data_ptr(),
            pos_embed.dtype,
            pos_embed.device,
        )
        cached = self._pos_cache.get(key)
        if cached is None:
            if len(self._pos_cache) > 16:
                self._pos_cache.clear()
            with torch.no_grad():
                cached = self._interpolate_pos_embed(pos_embed, grid)
            self._pos_cache[key] = cached
        return cached

    def _prepare_pos_embed(self, state_dict, prefix, *args, **kwargs):
        """Resize a loaded pos-embed whose grid differs from this model's."""
        name = prefix + 'pos_embed'
        if name not in state_dict:
            return
        ckpt = state_dict[name]
        if ckpt.shape == self.pos_embed.shape:
            return
        src = ckpt.shape[1] - 1
        side = int(math.sqrt(src))
        if side * side != src or ckpt.shape[-1] != self.pos_embed.shape[-1]:
            raise ValueError(
                f'Cannot resize checkpoint pos_embed {tuple(ckpt.shape)} to '
                f'{tuple(self.pos_embed.shape)}: expected (1, 1 + S*S, '
                f'{self.pos_embed.shape[-1]}).'
            )
        MMLogger.get_current_instance().info(
            f'Resize pos_embed from {side}x{side} to '
            f'{self.patch_resolution[0]}x{self.patch_resolution[1]}.'
        )
        state_dict[name] = resize_pos_embed(
            ckpt,
            self.patch_resolution,
            src_grid=(side, side),
            antialias=self.interpolate_antialias,
        )

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
        x, grid = self._embed_patches(x, mask)  # (B, N, C)
        x = torch.cat([self.cls_token.expand(B, -1, -1).to(x.dtype), x], dim=1)
        x = x + self.interpolate_pos_encoding(grid).to(x.dtype)
        if self.register_tokens is not None:
            regs = self.register_tokens.expand(B, -1, -1).to(x.dtype)
            x = torch.cat([x[:, :1], regs, x[:, 1:]], dim=1)
        x = self.drop_after_pos(x)
        x = self.pre_norm(x)
        return x, tuple(grid)

    def apply_final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The final norm of tokens (B, 1 + R + N, C)."""
        return self.ln1(x)


__all__: List[str] = ['DINOVisionTransformer']
