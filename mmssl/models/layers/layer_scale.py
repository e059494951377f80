# Copyright (c) mmssl contributors. All rights reserved.
"""LayerScale with DINOv3's parameter name (``gamma``).

A learned per-channel scale of a residual branch (Touvron et al., 2021,
`CaiT <https://arxiv.org/abs/2103.17239>`_). The blocks in mmpretrain's
layout use mmpretrain's ``LayerScale`` (parameter ``weight``) inside the
attention and the FFN; the DINOv3 layout scales the branch in the block
(``ls1.gamma``, ``ls2.gamma``) with this one.
"""

import torch
from torch import Tensor, nn


class LayerScale(nn.Module):
    """``x * gamma`` over the last dimension.

    Args:
        dims (int): Channels C.
        init_value (float): Initial value of every ``gamma`` entry.
            Defaults to 1e-5.
    """

    def __init__(self, dims: int, init_value: float = 1e-5) -> None:
        super().__init__()
        self.init_value = init_value
        self.gamma = nn.Parameter(torch.full((dims,), float(init_value)))

    def reset_parameters(self) -> None:
        """``gamma`` back to ``init_value``."""
        nn.init.constant_(self.gamma, self.init_value)

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


__all__ = ['LayerScale']
