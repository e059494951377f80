# Copyright (c) mmssl contributors. All rights reserved.
"""A ViT block whose stochastic depth skips the dropped samples' work."""

from functools import partial
from typing import Callable, Dict, Optional, Tuple

import torch
from mmpretrain.models.backbones.vision_transformer import (
    TransformerEncoderLayer,
)
from torch import Tensor, nn

from mmssl.models.utils.drop_path import (
    check_drop_path_mode,
    drop_add_residual,
)

from .token_packing import TokenGroups, grouped_attention

#: Compiled residual branches, shared by every block compiled with the
#: same ``torch.compile`` arguments: the functions are compiled unbound
#: and take the block as an argument, so dynamo traces one graph for all
#: blocks and a deep copy (the EMA teacher) computes with its own weights.
_COMPILED: Dict[str, Tuple[Callable, ...]] = {}
_BRANCHES = ('attn_residual', 'ffn_residual', 'attn_residual_packed')


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
    #: Which samples stochastic depth keeps (``DROP_PATH_MODES``).
    drop_path_mode: str = 'bernoulli'
    #: ``torch.compile`` arguments of :meth:`compile` (None: eager).
    compile_kwargs: Optional[dict] = None

    @classmethod
    def adopt(
        cls,
        layer: TransformerEncoderLayer,
        drop_path_rate: float,
        drop_path_mode: str = 'bernoulli',
    ) -> 'DINOBlock':
        """Turn a built ``TransformerEncoderLayer`` into a ``DINOBlock``.

        The layer's own ``DropPath`` modules (parameter-free) become
        identities and the FFN stops adding its input, because the block
        adds both residuals itself. Parameters are kept as they are.

        Args:
            layer (TransformerEncoderLayer): A freshly built layer.
            drop_path_rate (float): This block's drop rate.
            drop_path_mode (str): Which samples are kept, one of
                ``DROP_PATH_MODES`` (see
                :mod:`mmssl.models.utils.drop_path`).

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
        layer.drop_path_mode = check_drop_path_mode(drop_path_mode)
        return layer

    def compile(self, **kwargs) -> None:
        """``torch.compile`` the residual branches, not the whole block.

        Stochastic depth draws which samples run a branch, a
        data-dependent index set that would split a compiled block into
        several graphs (and ``torch.rand`` of a symbolic batch size fails
        to trace); compiling the branches leaves the draw and the
        indexing eager and compiles all the per-token work. The packed
        path (:meth:`attn_residual_packed`) uses the same compiled
        branches. ``kwargs`` are ``torch.compile`` arguments.
        """
        self.compile_kwargs = dict(kwargs)

    def branch(self, name: str) -> Callable:
        """The residual branch ``name`` of this block, compiled if
        :meth:`compile` was called."""
        if self.compile_kwargs is None:
            return getattr(self, name)
        key = repr(sorted(self.compile_kwargs.items()))
        if key not in _COMPILED:
            _COMPILED[key] = tuple(
                torch.compile(getattr(DINOBlock, n), **self.compile_kwargs)
                for n in _BRANCHES
            )
        return partial(_COMPILED[key][_BRANCHES.index(name)], self)

    def attn_residual(self, x: Tensor) -> Tensor:
        """Attention branch (B, N, C) -> (B, N, C), LayerScale included.

        mmpretrain's attention with ``unbind`` instead of indexing for q,
        k and v: the same values, and the backward stacks three gradients
        instead of filling and adding into a zero (3, B, heads, N, d)
        tensor per input.
        """
        attn = self.attn
        if attn.v_shortcut:
            return attn(self.ln1(x))
        B, N, C = x.shape
        # (B, N, 3C) -> (B, N, 3, heads, d) -> 3 x (B, heads, N, d)
        qkv = attn.qkv(self.ln1(x)).view(
            B, N, 3, attn.num_heads, attn.head_dims
        )
        q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
        drop = attn.attn_drop if self.training else 0.0
        out = attn.scaled_dot_product_attention(q, k, v, dropout_p=drop)
        out = out.transpose(1, 2).reshape(B, N, attn.embed_dims)
        return attn.gamma1(attn.proj_drop(attn.proj(out)))

    def attn_residual_packed(self, x: Tensor, groups: TokenGroups) -> Tensor:
        """Attention branch on packed tokens (S, C) -> (S, C), attention
        within each group of ``groups``."""
        attn = self.attn
        if attn.v_shortcut:
            raise ValueError('Token packing does not support v_shortcut.')
        drop = attn.attn_drop if self.training else 0.0

        def attend(q: Tensor, k: Tensor, v: Tensor, g: int) -> Tensor:
            return attn.scaled_dot_product_attention(q, k, v, dropout_p=drop)

        out = grouped_attention(
            attn.qkv(self.ln1(x)), groups, attn.num_heads, attend
        )
        return attn.gamma1(attn.proj_drop(attn.proj(out)))

    def ffn_residual(self, x: Tensor) -> Tensor:
        """FFN branch (..., C) -> (..., C), LayerScale included."""
        return self.ffn(self.ln2(x))

    def forward(self, x: Tensor) -> Tensor:
        """(B, N, C) -> (B, N, C)."""
        p, mode = self.drop_path_rate, self.drop_path_mode
        attn, ffn = self.branch('attn_residual'), self.branch('ffn_residual')
        x = drop_add_residual(x, attn, p, self.training, mode=mode)
        return drop_add_residual(x, ffn, p, self.training, mode=mode)

    def extra_repr(self) -> str:
        text = f'drop_path_rate={self.drop_path_rate:g}'
        if self.drop_path_mode != 'bernoulli':
            text += f', drop_path_mode={self.drop_path_mode!r}'
        if self.compile_kwargs is not None:
            text += f', compiled={self.compile_kwargs}'
        return text
