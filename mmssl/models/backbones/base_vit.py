# Copyright (c) mmssl contributors. All rights reserved.
"""The ViT that the DINO, DINOv3 and 3D backbones share.

Patch embedding -> tokens ``[CLS, REG_1..REG_R, PATCH_1..PATCH_N]``
(masked patches replaced by one learned mask token, iBOT, `arXiv:2111.07832
<https://arxiv.org/abs/2111.07832>`_) -> a stack of
:class:`~mmssl.models.layers.DINOBlock` -> final norm -> ``out_type``.
:class:`BaseViT` holds that walk once: ``forward`` for one batch,
``forward_packed`` for groups of crops of several sizes in one pass
(:mod:`~mmssl.models.layers.token_packing`; the outputs are those of one
``forward`` per group up to float rounding), the last attention map,
the arch table lookup and the layer depths of layer-wise lr decay.
"""

from typing import List, Optional, Sequence, Tuple, Union

import torch
from mmpretrain.models.backbones.base_backbone import BaseBackbone
from torch import Tensor, nn

from mmssl.models.layers.attention import Rope
from mmssl.models.layers.drop_path import draw_layer_keeps
from mmssl.models.layers.mask_token import apply_mask_token
from mmssl.models.layers.token_packing import (
    TokenGroups,
    group_masks,
    pack_tokens,
    unpack_tokens,
)
from mmssl.models.utils.activation_checkpoint import (
    check_cp_mode,
    checkpoint_block,
)

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


class BaseViT(BaseBackbone):
    """A ViT over ``layers``, each block built with its own drop-path rate.

    The subclass's ``__init__`` calls this one, then builds in this order
    ``patch_embed`` (:class:`~mmssl.models.layers.PatchEmbed`), the tokens
    (:meth:`_build_tokens`), ``layers`` and its final norm; it defines
    :meth:`prepare_tokens` and :meth:`apply_final_norm`, and a RoPE
    backbone :meth:`rope`. It names its arch table ``arch_zoo`` and its
    depth-0 parameters ``EMBED_PARAMS``.

    Args:
        arch (str | dict): A name of ``arch_zoo`` or a dict with
            ``embed_dims``, ``num_layers``, ``num_heads`` and optionally
            ``feedforward_channels`` (defaults to 4x embed_dims).
        num_register_tokens (int): Register tokens R >= 0 (Darcet et al.,
            2023, `arXiv:2309.16588 <https://arxiv.org/abs/2309.16588>`_).
        out_type (str): ``'cls_token'`` (B, C), ``'raw'`` (B, 1 + R + N,
            C), ``'featmap'`` (B, C, *grid) or ``'avg_featmap'`` (B, C,
            the mean of the patch tokens).
        out_indices (int | Sequence[int]): Blocks whose outputs are
            returned, each through the final norm.
        final_norm (bool): Norm the returned tokens.
        with_cp (bool | str): Non-reentrant activation checkpointing per
            block in training: True/``'full'`` or ``'selective'`` (see
            :mod:`mmssl.models.utils.activation_checkpoint`).
        init_cfg (dict, optional): mmengine initialisation config.
    """

    arch_zoo: dict = {}
    EMBED_PARAMS: Tuple[str, ...] = (
        'cls_token',
        'register_tokens',
        'mask_token',
    )

    def __init__(
        self,
        arch: Union[str, dict],
        num_register_tokens: int,
        out_type: str,
        out_indices: Union[int, Sequence[int]],
        final_norm: bool,
        with_cp: Union[bool, str],
        init_cfg: Optional[dict] = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
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
        s = self._resolve_arch(arch)
        self.arch_settings = s
        self.embed_dims, self.num_layers = s['embed_dims'], s['num_layers']
        self.num_heads = s['num_heads']
        self.num_register_tokens = num_register_tokens
        # Tokens before the patches in the output sequence: CLS + registers.
        self.num_extra_tokens = 1 + num_register_tokens
        self.out_type = out_type
        L = self.num_layers
        self.out_indices = self._check_out_indices(out_indices, L)
        self.final_norm = final_norm
        self.with_cp = check_cp_mode(with_cp)

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

    def _build_tokens(self, num_positions: int = 0) -> None:
        """The CLS token, a learned position embedding of
        ``num_positions`` entries (0: none), the register tokens and the
        mask token, all zeros (``init_weights`` draws them)."""
        C, R = self.embed_dims, self.num_register_tokens
        self.cls_token = nn.Parameter(torch.zeros(1, 1, C))
        if num_positions:
            self.pos_embed = nn.Parameter(torch.zeros(1, num_positions, C))
        self.register_tokens = (
            nn.Parameter(torch.zeros(1, R, C)) if R > 0 else None
        )
        self.mask_token = nn.Parameter(torch.zeros(C))

    def train(self, mode: bool = True) -> 'BaseViT':
        """Set train/eval mode; returns self (mmpretrain's BaseBackbone
        returns None)."""
        super().train(mode)
        return self

    # ------------------------------------------------------------------
    # tokens
    def prepare_tokens(
        self, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tuple[Tensor, tuple]:
        """Tokens (B, 1 + R + N, C) of inputs and their patch grid."""
        raise NotImplementedError

    def apply_final_norm(self, x: Tensor) -> Tensor:
        """The final norm of tokens (B, 1 + R + N, C)."""
        raise NotImplementedError

    def rope(self, grid: tuple) -> Rope:
        """RoPE (sin, cos) of a patch grid; None: no RoPE."""
        return None

    def _embed_patches(
        self, x: Tensor, mask: Optional[Tensor]
    ) -> Tuple[Tensor, tuple]:
        """Patch embeddings (B, N, C), masked patches replaced by the mask
        token, and the patch grid."""
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

    def _embed(self, x: Tensor, mask: Optional[Tensor]):
        """Tokens, patch grid and RoPE of one group of inputs."""
        tokens, grid = self.prepare_tokens(x, mask)
        return tokens, tuple(grid), self.rope(grid)

    # ------------------------------------------------------------------
    # blocks
    def _run_layer(
        self, layer: nn.Module, x: Tensor, groups=None, keeps=None, ropes=None
    ) -> Tensor:
        """One block, checkpointed in training when ``with_cp`` says so;
        ``keeps`` (its kept samples) are drawn outside so that a
        recomputation replays them (None: the block draws)."""
        if self.with_cp and self.training and torch.is_grad_enabled():
            # Non-reentrant: DDP-safe when a block runs twice per step.
            return checkpoint_block(
                layer, x, groups, keeps, ropes, with_cp=self.with_cp
            )
        return layer(x, groups, keeps, ropes)

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tuple[Tensor, ...]:
        """Forward inputs, optionally masking patches.

        Args:
            x (Tensor): Images (B, C_in, H, W) (volumes for the 3D ViT).
            mask (Tensor, optional): Bool patch mask (B, *grid) or (B, N);
                True marks patches replaced by the mask token.

        Returns:
            tuple[Tensor]: One output per ``out_indices``, formatted by
            ``out_type``.
        """
        x, grid, rope = self._embed(x, mask)
        group = TokenGroups((x.shape[:2],))  # one group: (B, T)
        outs = []
        keeps = draw_layer_keeps(self.layers, group, x)
        for i, layer in enumerate(self.layers):
            x = self._run_layer(layer, x, None, keeps[i], [rope])
            if i in self.out_indices:
                outs.append(self._output(x, grid))
        return tuple(outs)

    def forward_packed(
        self,
        xs: Sequence[Tensor],
        masks: Optional[Sequence[Optional[Tensor]]] = None,
        generators: Optional[Sequence[Optional[torch.Generator]]] = None,
    ) -> List[Tuple[Tensor, ...]]:
        """Forward groups of crops, each group of one size, in one pass.

        Args:
            xs (Sequence[Tensor]): Groups of images (B_g, C_in, H_g, W_g).
            masks (Sequence, optional): Per group, a patch mask as in
                :meth:`forward` or None. Defaults to None (no masks).
            generators (Sequence, optional): Per group, the generator of
                that group's stochastic-depth draws (None: global RNG).
                Group g then draws what ``forward(xs[g])`` would draw.

        Returns:
            list[tuple[Tensor]]: Per group, what ``forward(xs[g],
            masks[g])`` returns.
        """
        masks = group_masks(xs, masks)
        tokens, grids, ropes = zip(
            *(self._embed(x, m) for x, m in zip(xs, masks))
        )
        x, groups = pack_tokens(tokens)  # (S, C)
        outs: List[List[Tensor]] = [[] for _ in xs]
        keeps = draw_layer_keeps(self.layers, groups, x, generators)
        for i, layer in enumerate(self.layers):
            x = self._run_layer(layer, x, groups, keeps[i], list(ropes))
            if i in self.out_indices:
                parts = unpack_tokens(x, groups)
                for g, (part, grid) in enumerate(zip(parts, grids)):
                    outs[g].append(self._output(part, grid))
        return [tuple(o) for o in outs]

    @torch.no_grad()
    def get_last_selfattention(
        self, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tensor:
        """Softmax attention (B, heads, T, T) of the last block, computed
        explicitly, T = 1 + R + N; row 0 is the CLS query."""
        x, _, rope = self._embed(x, mask)
        for layer in self.layers[:-1]:
            x = layer(x, ropes=[rope])
        last = self.layers[-1]
        return last.attn.attention_map(last.ln1(x), rope)

    # ------------------------------------------------------------------
    # outputs
    def _output(self, x: Tensor, grid: tuple) -> Tensor:
        """Tokens (B, T, C) of one group, normed and formatted."""
        return self._format_output(
            self.apply_final_norm(x) if self.final_norm else x, grid
        )

    def _format_output(self, x: Tensor, grid: tuple) -> Tensor:
        if self.out_type == 'raw':
            return x  # (B, 1 + R + N, C)
        if self.out_type == 'cls_token':
            return x[:, 0]  # (B, C)
        patch = x[:, self.num_extra_tokens :]  # (B, N, C)
        if self.out_type == 'featmap':
            # (B, N, C) -> (B, *grid, C) -> (B, C, *grid)
            dims = len(grid)
            patch = patch.reshape(x.shape[0], *grid, -1)
            return patch.permute(0, dims + 1, *range(1, dims + 1))
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


__all__ = ['BaseViT', 'vit_arch']
