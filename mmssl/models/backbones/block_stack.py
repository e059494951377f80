# Copyright (c) mmssl contributors. All rights reserved.
"""Running a ViT's stack of blocks: one batch, or groups packed together.

What the DINO and DINOv3 ViTs share past their token embedding: every
block of ``layers`` (:class:`~mmssl.models.layers.DINOBlock`) runs with
the kept samples its stochastic depth draws outside it, under activation
checkpointing when asked; the outputs of ``out_indices`` go through the
final norm and the ``out_type`` format. :meth:`BlockStackMixin.
forward_packed` runs groups of crops of several sizes in one pass
(:mod:`~mmssl.models.layers.token_packing`): their tokens are packed into
one (S, C) tensor, every token-wise layer runs once on it and attention
runs per group. The outputs are those of calling ``forward`` once per
group, up to float rounding.
"""

from typing import List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from mmssl.models.layers.attention import Rope
from mmssl.models.layers.drop_path import draw_layer_keeps
from mmssl.models.layers.token_packing import (
    TokenGroups,
    group_masks,
    pack_tokens,
    unpack_tokens,
)
from mmssl.models.utils.activation_checkpoint import checkpoint_block


class BlockStackMixin:
    """``forward``, ``forward_packed`` and ``get_last_selfattention``.

    The class using it has ``layers``, ``out_indices``, ``with_cp``,
    ``final_norm``, ``prepare_tokens(x, mask)`` (tokens (B, T, C) and the
    patch grid), ``apply_final_norm(x)`` and ``_format_output(x, grid)``;
    a RoPE backbone overrides :meth:`rope`.
    """

    def rope(self, grid: Tuple[int, int]) -> Rope:
        """RoPE (sin, cos) of a patch grid; None: no RoPE."""
        return None

    def _embed(self, x: Tensor, mask: Optional[Tensor]):
        """Tokens, patch grid and RoPE of one group of images."""
        tokens, grid = self.prepare_tokens(x, mask)
        return tokens, tuple(grid), self.rope(grid)

    def _run_layer(
        self, layer: nn.Module, x: Tensor, groups=None, keeps=None, ropes=None
    ) -> Tensor:
        """One block, checkpointed in training when ``with_cp`` says so;
        ``keeps`` of ``layer.draw_keeps``, drawn outside so that a
        recomputation replays them (None: the block draws)."""
        if self.with_cp and self.training and torch.is_grad_enabled():
            # Non-reentrant: DDP-safe when a block runs twice per step.
            return checkpoint_block(
                layer, x, groups, keeps, ropes, with_cp=self.with_cp
            )
        return layer(x, groups, keeps, ropes)

    def _output(self, x: Tensor, grid: Tuple[int, int]) -> Tensor:
        """Tokens (B, T, C) of one group, normed and formatted."""
        return self._format_output(
            self.apply_final_norm(x) if self.final_norm else x, grid
        )

    def forward(
        self, x: Tensor, mask: Optional[Tensor] = None
    ) -> Tuple[Tensor, ...]:
        """Forward images, optionally masking patches.

        Args:
            x (Tensor): Images (B, C_in, H, W).
            mask (Tensor, optional): Bool patch mask (B, Hp, Wp) or
                (B, Hp*Wp); True marks patches replaced by the mask
                token. Defaults to None.

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
        """Softmax attention of the last block, computed explicitly.

        Args:
            x (Tensor): Images (B, C_in, H, W).
            mask (Tensor, optional): Patch mask as in :meth:`forward`.

        Returns:
            Tensor: Attention (B, heads, T, T), T = 1 + R + N; row 0 is
            the CLS query.
        """
        x, _, rope = self._embed(x, mask)
        for layer in self.layers[:-1]:
            x = layer(x, ropes=[rope])
        last = self.layers[-1]
        return last.attn.attention_map(last.ln1(x), rope)


__all__ = ['BlockStackMixin']
