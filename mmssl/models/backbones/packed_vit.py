# Copyright (c) mmssl contributors. All rights reserved.
"""``forward_packed``: one backbone pass over crops of several sizes.

The packed forward of :class:`~mmssl.models.DINOv3ViT`. Each group of
same-size crops is embedded on its own (patch embedding, mask token,
RoPE, registers); then the tokens of all groups are packed into one
(S, C) tensor, every token-wise layer runs once on it and attention runs
per group (:mod:`mmssl.models.layers.token_packing`). The outputs are
those of calling ``forward`` once per group, up to float rounding.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mmssl.models.layers.token_packing import (
    Keep,
    TokenGroups,
    draw_keep,
    group_masks,
    grouped_attention,
    pack_tokens,
    packed_residual,
    unpack_tokens,
)
from mmssl.models.utils.activation_checkpoint import (
    checkpoint_block,
)
from mmssl.models.utils.rope import apply_rope

Ropes = Optional[List[Optional[Tuple[Tensor, Tensor]]]]


def _dinov3_attn_packed(
    layer: nn.Module, t: Tensor, groups: TokenGroups, ropes: Ropes
) -> Tensor:
    """Attention branch of a :class:`DINOv3Block` on packed tokens."""
    attn = layer.attn

    def attend(q: Tensor, k: Tensor, v: Tensor, g: int) -> Tensor:
        if ropes is not None and ropes[g] is not None:
            sin, cos = ropes[g]
            q, k = apply_rope(q, sin, cos), apply_rope(k, sin, cos)
        return F.scaled_dot_product_attention(q, k, v)

    out = grouped_attention(
        attn.qkv(layer.ln1(t)), groups, attn.num_heads, attend
    )
    return layer.ls1(attn.proj(out))


def _dinov3_ffn(layer: nn.Module, t: Tensor) -> Tensor:
    """FFN branch of a :class:`DINOv3Block` (..., C) -> (..., C)."""
    return layer.ls2(layer.ffn(layer.ln2(t)))


#: Compiled DINOv3 packed branches per ``torch.compile`` arguments (the
#: functions take the block as an argument: one graph for all blocks).
_COMPILED_V3: Dict[str, Tuple[Callable, Callable]] = {}


def _dinov3_branches(layer: nn.Module) -> Tuple[Callable, Callable]:
    kwargs = getattr(layer, 'compile_kwargs', None)
    if kwargs is None:
        return _dinov3_attn_packed, _dinov3_ffn
    key = repr(sorted(kwargs.items()))
    if key not in _COMPILED_V3:
        _COMPILED_V3[key] = (
            torch.compile(_dinov3_attn_packed, **kwargs),
            torch.compile(_dinov3_ffn, **kwargs),
        )
    return _COMPILED_V3[key]


def dinov3_block_packed(
    layer: nn.Module,
    x: Tensor,
    groups: TokenGroups,
    ropes: Ropes,
    keep_attn: Keep,
    keep_ffn: Keep,
) -> Tensor:
    """A :class:`DINOv3Block` on packed tokens (S, C) -> (S, C), RoPE of
    group ``g`` on that group's patch tokens; the branches are compiled
    when the block is (``compile_blocks``), the stochastic-depth indexing
    stays eager."""
    attn_fn, ffn_fn = _dinov3_branches(layer)

    def attn_branch(t: Tensor, grp: TokenGroups) -> Tensor:
        return attn_fn(layer, t, grp, ropes)

    def ffn_branch(t: Tensor, grp: TokenGroups) -> Tensor:
        return ffn_fn(layer, t)

    x = packed_residual(x, attn_branch, groups, keep_attn)
    return packed_residual(x, ffn_branch, groups, keep_ffn)


class DINOv3PackingMixin:
    """``forward_packed`` for :class:`DINOv3ViT`: RoPE per group, mmcv
    ``DropPath`` draws (``'floor'`` rule), untied CLS/patch final norms.
    """

    def _packed_final_norm(self, x: Tensor, groups: TokenGroups) -> Tensor:
        if self.cls_norm is None:
            return self.norm(x)
        parts = unpack_tokens(x, groups)
        return pack_tokens([self.apply_final_norm(p) for p in parts])[0]

    def _packed_embed(self, x: Tensor, mask: Optional[Tensor]):
        """Tokens (B, T, C), patch grid and RoPE of one group."""
        tokens, grid = self.prepare_tokens(x, mask)
        return tokens, tuple(grid), self.rope_embed(*grid)

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
                ``forward`` or None. Defaults to None (no masks).
            generators (Sequence, optional): Per group, the generator of
                that group's stochastic-depth draws (None: global RNG).
                Group g then draws what ``forward(xs[g])`` would draw.

        Returns:
            list[tuple[Tensor]]: Per group, what ``forward(xs[g],
            masks[g])`` returns.
        """
        masks = group_masks(xs, masks)
        tokens, grids, ropes = zip(
            *(self._packed_embed(x, m) for x, m in zip(xs, masks))
        )
        x, groups = pack_tokens(tokens)  # (S, C)
        outs: List[List[Tensor]] = [[] for _ in xs]
        for i, layer in enumerate(self.layers):
            p = getattr(layer.drop_path, 'drop_prob', 0.0)
            keeps = [
                draw_keep(
                    groups,
                    p if layer.training else 0.0,
                    'floor',
                    x.device,
                    x.dtype,
                    generators,
                    layer.drop_path_mode,
                )
                for _ in range(2)  # attention branch, then FFN branch
            ]
            x = self._run_packed_layer(layer, x, groups, list(ropes), keeps)
            if i in self.out_indices:
                out = (
                    self._packed_final_norm(x, groups)
                    if self.final_norm
                    else x
                )
                for g, part in enumerate(unpack_tokens(out, groups)):
                    outs[g].append(self._format_output(part, grids[g]))
        return [tuple(o) for o in outs]

    def _run_packed_layer(
        self, layer, x: Tensor, groups: TokenGroups, ropes, keeps
    ) -> Tensor:
        args = (layer, x, groups, ropes, *keeps)
        if self.with_cp and self.training and torch.is_grad_enabled():
            # Keep decisions are drawn outside, so recomputation reuses them.
            return checkpoint_block(
                dinov3_block_packed, *args, with_cp=self.with_cp
            )
        return dinov3_block_packed(*args)


__all__ = [
    'DINOv3PackingMixin',
    'dinov3_block_packed',
]
