# Copyright (c) mmssl contributors. All rights reserved.
"""The DINOv3 Vision Transformer backbone.

Siméoni et al., 2025, `DINOv3 <https://arxiv.org/abs/2508.10104>`_: a ViT
with no learned position embedding but 2D axial rotary embeddings (RoPE)
on the patch tokens only, so it takes any input size without resizing
anything; register ("storage") tokens; LayerScale; an MLP or SwiGLU FFN;
the key part of the qkv bias masked to zero; optionally separate final
norms for the CLS/register tokens. Token order ``[CLS, REG_1..REG_R,
PATCH_1..PATCH_N]``, patches row-major.

Its forward passes, mask token, ``out_type``, activation checkpointing
and layer depths are those of
:class:`~mmssl.models.backbones.base_vit.BaseViT`, as for the DINO ViT,
so the DINO, iBOT and DINOv2 algorithms and the kNN / attention tools
use it unchanged.
"""

from typing import List, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
from mmengine.model.weight_init import trunc_normal_
from torch import Tensor

from mmssl.models.layers import DINOBlock
from mmssl.models.layers.attention import MaskedBiasLinear, Rope
from mmssl.models.layers.layer_scale import LayerScale
from mmssl.models.layers.patch_embed import PatchEmbed
from mmssl.models.layers.rope import RoPE2D
from mmssl.models.utils.compile_blocks import compile_blocks as _compile_blocks
from mmssl.registry import MODELS

from .base_vit import BaseViT
from .base_vit import vit_arch as _arch


@MODELS.register_module()
class DINOv3ViT(BaseViT):
    """DINOv3 ViT with RoPE, registers, LayerScale and masked K-bias.

    Args:
        arch (str | dict): ``'small'`` (S/16), ``'small_plus'`` (S+/16,
            SwiGLU), ``'base'`` (B/16), ``'large'`` (L/16), ``'huge_plus'``
            (H+/16), ``'7b'``, or a dict with ``embed_dims``,
            ``num_layers``, ``num_heads`` and optionally
            ``feedforward_channels`` (default 4x), ``ffn_type`` (``'mlp'``
            or ``'swiglu'``), ``swiglu_align`` (8), ``qkv_bias`` (True),
            ``untie_global_and_local_cls_norm`` (False).
        patch_size (int): Patch size. Defaults to 16.
        in_channels (int): Image channels. Defaults to 3.
        num_register_tokens (int): Register (storage) tokens R. Defaults
            to 4 (all released models).
        layer_scale_init_value (float): LayerScale init; 0 disables it.
            Defaults to 1e-5.
        drop_path_rate (float): Stochastic depth, the same rate in every
            block as in DINOv3; it acts in training mode while autograd
            records (:class:`~mmssl.models.layers.DINOBlock`). Defaults
            to 0.
        drop_path_mode (str): Which samples a block keeps, as in
            :class:`~mmssl.models.DINOVisionTransformer`; ``'bernoulli'``
            draws as mmcv's ``DropPath`` does. Branches run on the kept
            samples only (:mod:`mmssl.models.layers.drop_path`). Defaults
            to ``'bernoulli'``.
        norm_eps (float): LayerNorm epsilon. Defaults to 1e-5 (released).
        mask_k_bias (bool): Zero the key part of the qkv bias through the
            ``attn.qkv.bias_mask`` buffer. Defaults to True.
        untie_cls_and_patch_norms (bool): A separate final ``cls_norm`` for
            CLS and registers. Defaults to False (all released models).
        untie_global_and_local_cls_norm (bool, optional): Hold a
            ``local_cls_norm`` as the released ViT-7B and ViT-L SAT-493M
            do; DINOv3 uses it on local crops in training only, so it is
            kept for loading/saving and not used by :meth:`forward`.
            Defaults to None (the arch's value).
        rope_base (float): RoPE period base. Defaults to 100.
        rope_normalize_coords (str): See :class:`RoPE2D`.
        rope_shift_coords, rope_jitter_coords (float, optional): Training
            coordinate augmentations. Default to None.
        rope_rescale_coords (float, optional): Training coordinate rescale;
            the released models used 2. Defaults to 2.
        out_type (str): ``'cls_token'`` (B, C), ``'raw'`` (B, 1 + R + N, C),
            ``'featmap'`` (B, C, Hp, Wp) or ``'avg_featmap'`` (B, C).
        out_indices (int | Sequence[int]): Blocks whose outputs are
            returned, each through the final norm(s). Defaults to -1.
        final_norm (bool): Apply the final norm(s). Defaults to True.
        with_cp (bool | str): Non-reentrant activation checkpointing per
            block: True/``'full'``, or ``'selective'`` (by op, see
            :mod:`mmssl.models.utils.activation_checkpoint`).
        compile_blocks (bool | dict): ``torch.compile`` each block (a dict
            gives ``torch.compile`` arguments); see
            :func:`mmssl.models.utils.compile_blocks`. Defaults to False.
        init_cfg (dict, optional): mmengine init config.
    """

    arch_zoo = {
        **dict.fromkeys(['s', 'small'], _arch(384, 12, 6)),
        **dict.fromkeys(
            ['s+', 'small_plus'], _arch(384, 12, 6, 6, ffn_type='swiglu')
        ),
        **dict.fromkeys(['b', 'base'], _arch(768, 12, 12)),
        **dict.fromkeys(['l', 'large'], _arch(1024, 24, 16)),
        **dict.fromkeys(
            ['h+', 'huge_plus'], _arch(1280, 32, 20, 6, ffn_type='swiglu')
        ),
        '7b': _arch(
            4096,
            40,
            32,
            3,
            ffn_type='swiglu',
            swiglu_align=64,
            qkv_bias=False,
            untie_global_and_local_cls_norm=True,
        ),
    }

    def __init__(
        self,
        arch: Union[str, dict] = 'small',
        patch_size: int = 16,
        in_channels: int = 3,
        num_register_tokens: int = 4,
        layer_scale_init_value: float = 1e-5,
        drop_path_rate: float = 0.0,
        drop_path_mode: str = 'bernoulli',
        norm_eps: float = 1e-5,
        mask_k_bias: bool = True,
        untie_cls_and_patch_norms: bool = False,
        untie_global_and_local_cls_norm: Optional[bool] = None,
        rope_base: float = 100.0,
        rope_normalize_coords: str = 'separate',
        rope_shift_coords: Optional[float] = None,
        rope_jitter_coords: Optional[float] = None,
        rope_rescale_coords: Optional[float] = 2.0,
        out_type: str = 'cls_token',
        out_indices: Union[int, Sequence[int]] = -1,
        final_norm: bool = True,
        with_cp: Union[bool, str] = False,
        compile_blocks: Union[bool, dict] = False,
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
        s, C, L = self.arch_settings, self.embed_dims, self.num_layers
        self.patch_size = patch_size

        # Patch embedding, tokens, RoPE, blocks, final norm(s).
        self.patch_embed = PatchEmbed(in_channels, C, patch_size)
        self._build_tokens()
        self.rope_embed = RoPE2D(
            C // self.num_heads,
            base=rope_base,
            normalize_coords=rope_normalize_coords,
            shift_coords=rope_shift_coords,
            jitter_coords=rope_jitter_coords,
            rescale_coords=rope_rescale_coords,
        )
        # Blocks in DINOv3's layout (LayerScale ls1/ls2, fc1/fc2 or w1-w3).
        self.layers = nn.ModuleList(
            DINOBlock(
                C,
                self.num_heads,
                s['feedforward_channels'],
                drop_path_rate=drop_path_rate,
                drop_path_mode=drop_path_mode,
                layer_scale_init_value=layer_scale_init_value,
                qkv_bias=s.get('qkv_bias', True),
                ffn_type=s.get('ffn_type', 'mlp'),
                swiglu_align=s.get('swiglu_align', 8),
                mask_k_bias=mask_k_bias,
                keep_rule='floor',
                norm_cfg=dict(type='LN', eps=norm_eps),
            )
            for _ in range(L)
        )
        _compile_blocks(self.layers, compile_blocks)
        self.norm = nn.LayerNorm(C, eps=norm_eps)
        self.cls_norm = None
        if untie_cls_and_patch_norms:
            self.cls_norm = nn.LayerNorm(C, eps=norm_eps)
        if untie_global_and_local_cls_norm is None:
            untie_global_and_local_cls_norm = s.get(
                'untie_global_and_local_cls_norm', False
            )
        self.local_cls_norm = (
            nn.LayerNorm(C, eps=norm_eps)
            if untie_global_and_local_cls_norm
            else None
        )

    def init_weights(self) -> None:
        """DINOv3 init: Linear trunc-normal(0.02) with zero bias, CLS and
        register tokens normal(0.02), mask token zeros, LayerScale to its
        init value, RoPE periods from the base; the patch convolution keeps
        PyTorch's default. A ``Pretrained`` init_cfg loads instead."""
        super().init_weights()
        cfg = self.init_cfg
        if isinstance(cfg, dict) and cfg.get('type') == 'Pretrained':
            return
        for m in self.modules():
            if isinstance(m, nn.Linear):
                trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            if isinstance(m, MaskedBiasLinear):
                m.reset_mask()
            elif isinstance(m, (nn.LayerNorm, LayerScale)):
                m.reset_parameters()
        nn.init.normal_(self.cls_token, std=0.02)
        if self.register_tokens is not None:
            nn.init.normal_(self.register_tokens, std=0.02)
        nn.init.zeros_(self.mask_token)
        self.rope_embed.reset_periods()

    # ------------------------------------------------------------------
    # forward
    def prepare_tokens(
        self, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tuple[Tensor, Tuple[int, int]]:
        """Patchify, apply the mask token, prepend CLS and registers.

        Args:
            x (Tensor): Images (B, C_in, H, W).
            mask (Tensor, optional): Bool mask (B, Hp, Wp) or (B, Hp*Wp);
                True marks patches replaced by ``mask_token``.

        Returns:
            tuple: Tokens (B, 1 + R + N, C) and the patch grid (Hp, Wp).
        """
        B = x.shape[0]
        x, grid = self._embed_patches(x, mask)  # (B, N, C)
        tokens = [self.cls_token.expand(B, -1, -1)]
        if self.register_tokens is not None:
            tokens.append(self.register_tokens.expand(B, -1, -1))
        x = torch.cat([t.to(x.dtype) for t in tokens] + [x], dim=1)
        return x, grid

    def rope(self, grid: Tuple[int, int]) -> Rope:
        """RoPE (sin, cos), each (Hp*Wp, head_dims), of a patch grid."""
        return self.rope_embed(*grid)

    def apply_final_norm(self, x: Tensor) -> Tensor:
        """Final norm of tokens (B, 1 + R + N, C); ``cls_norm`` on CLS and
        registers when the norms are untied."""
        if self.cls_norm is None:
            return self.norm(x)
        n = self.num_extra_tokens
        return torch.cat([self.cls_norm(x[:, :n]), self.norm(x[:, n:])], 1)


__all__: List[str] = ['DINOv3ViT']
