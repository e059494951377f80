"""DINO projection head with a weight-normalised prototype layer."""

from typing import Optional

import torch
import torch.nn.functional as F
from mmengine.model import BaseModule
from mmengine.model.weight_init import trunc_normal_
from torch import Tensor, nn
from torch.nn.utils.parametrizations import weight_norm as torch_weight_norm

from mmssl.registry import MODELS


@MODELS.register_module()
class DINOHead(BaseModule):
    """Projection head of DINO (https://arxiv.org/abs/2104.14294), also the
    iBOT patch head (https://arxiv.org/abs/2111.07832) and the DINOv2 heads.

    ``x -> MLP (Linear-GELU x (nlayers-1), Linear to bottleneck) -> L2
    normalise -> weight-normalised Linear (no bias) to n_prototypes``.

    The prototype layer is called ``last_layer`` (the freeze hook matches on
    that name). Its weight-norm gain is initialised to 1; with
    ``norm_last_layer=True`` the gain stays fixed (each prototype is a unit
    vector, so the logits are cosine similarities): more stable, recommended
    for ViT-B and larger; ``False`` is often better for ViT-S (DINO notes).

    Args:
        in_channels (int): Input dimension (backbone embed dims).
        n_prototypes (int): Output dimension K. Defaults to 65536.
        hidden_channels (int): MLP hidden dimension. Defaults to 2048.
        bottleneck_channels (int): Bottleneck dimension. Defaults to 256.
        nlayers (int): Number of MLP Linear layers. Defaults to 3.
        use_bn (bool): BatchNorm after hidden Linear layers (DINO's ResNet
            recipe). Defaults to False.
        norm_last_layer (bool): Fix the prototype norms to 1. Defaults to
            True.
        weight_norm (bool): Weight-normalise the prototype layer (DINO,
            iBOT, DINOv2). ``False``: a plain ``Linear`` initialised with a
            truncated normal (std 0.02), as DINOv3's head; it needs
            ``norm_last_layer=False``. Defaults to True.
    """

    def __init__(
        self,
        in_channels: int,
        n_prototypes: int = 65536,
        hidden_channels: int = 2048,
        bottleneck_channels: int = 256,
        nlayers: int = 3,
        use_bn: bool = False,
        norm_last_layer: bool = True,
        weight_norm: bool = True,
        init_cfg: Optional[dict] = None,
    ) -> None:
        super().__init__(init_cfg=init_cfg)
        if nlayers < 1:
            raise ValueError(f'nlayers must be >= 1, got {nlayers}.')
        self.in_channels = in_channels
        self.n_prototypes = n_prototypes
        layers = []
        dim = in_channels
        for _ in range(nlayers - 1):
            layers.append(nn.Linear(dim, hidden_channels))
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_channels))
            layers.append(nn.GELU())
            dim = hidden_channels
        layers.append(nn.Linear(dim, bottleneck_channels))
        self.mlp = nn.Sequential(*layers)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)
        last = nn.Linear(bottleneck_channels, n_prototypes, bias=False)
        if not weight_norm:
            if norm_last_layer:
                raise ValueError(
                    'DINOHead(weight_norm=False) has no prototype norms to '
                    'fix: set norm_last_layer=False.'
                )
            trunc_normal_(last.weight, std=0.02)
            self.last_layer = last
            return
        self.last_layer = torch_weight_norm(last)
        gain = self.last_layer.parametrizations.weight.original0
        gain.data.fill_(1.0)
        if norm_last_layer:
            gain.requires_grad = False

    def forward(self, x: Tensor) -> Tensor:
        """(N, in_channels) -> (N, n_prototypes) logits."""
        x = self.mlp(x)
        eps = 1e-6 if x.dtype == torch.float16 else 1e-12
        x = F.normalize(x, p=2, dim=-1, eps=eps)  # (N, bottleneck)
        return self.last_layer(x)
