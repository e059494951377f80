# Copyright (c) mmssl contributors. All rights reserved.
"""Layer-wise lr decay that also honours ``lr_mult`` custom keys."""

from typing import Callable, List, Optional, Tuple

from mmpretrain.engine.optimizers import (
    LearningRateDecayOptimWrapperConstructor,
)
from torch import nn

from mmssl.registry import OPTIM_WRAPPER_CONSTRUCTORS


def _find_layer_depth_fn(
    module: nn.Module,
) -> Callable[[str], Tuple[int, int]]:
    """Pick ``get_layer_depth`` from the model or its trainable backbone."""
    if hasattr(module, 'get_layer_depth'):
        return module.get_layer_depth
    for name, sub in module.named_modules():
        if not name or not hasattr(sub, 'get_layer_depth'):
            continue
        if any(p.requires_grad for p in sub.parameters()):
            prefix = name + '.'
            return lambda param_name: sub.get_layer_depth(param_name, prefix)
    raise NotImplementedError(
        f'Layer-wise lr decay needs a get_layer_depth method on '
        f'{type(module).__name__} or on one of its trainable sub-modules '
        '(e.g. a DINOVisionTransformer backbone).'
    )


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class LayerDecayOptimWrapperConstructor(
    LearningRateDecayOptimWrapperConstructor
):
    """mmpretrain's layer-wise lr decay plus multiplicative ``lr_mult``.

    mmpretrain's ``LearningRateDecayOptimWrapperConstructor`` ignores
    ``lr_mult`` in ``custom_keys``. DINOv2 (Oquab et al., 2023) multiplies
    the patch-embedding lr by 0.2 *on top of* the layer decay; here a
    ``custom_keys`` entry's ``lr_mult`` multiplies the decayed lr::

        paramwise_cfg=dict(
            layer_decay_rate=0.9,
            norm_decay_mult=0., bias_decay_mult=0., flat_decay_mult=0.,
            custom_keys={'patch_embed': dict(lr_mult=0.2)})

    The layer depth comes from the model's ``get_layer_depth`` or, when it
    has none, from the first trainable sub-module that has one (e.g. the
    student backbone; a frozen EMA teacher is skipped).

    Note:
        As in mmpretrain, ``custom_keys`` are only applied when the optimizer
        config has ``weight_decay``, and a matched key replaces the norm /
        bias / flat weight-decay rules for that parameter (add
        ``decay_mult`` to the entry if it should not decay).
    """

    def add_params(
        self,
        params: List[dict],
        module: nn.Module,
        prefix: str = '',
        get_layer_depth: Optional[Callable] = None,
        **kwargs,
    ) -> None:
        if prefix == '' and get_layer_depth is None:
            get_layer_depth = _find_layer_depth_fn(module)
        super().add_params(
            params,
            module,
            prefix=prefix,
            get_layer_depth=get_layer_depth,
            **kwargs,
        )
        if prefix != '':
            return
        for group in params:
            lr_mult = group.pop('lr_mult', None)
            if lr_mult is not None:
                group['lr'] *= lr_mult
                group['lr_scale'] *= lr_mult
