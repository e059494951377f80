"""Layer-wise lr decay plus per-key lr multipliers (DINOv2 recipe)."""
from typing import List

from mmpretrain.engine.optimizers import \
    LearningRateDecayOptimWrapperConstructor
from torch import nn

from mmssl.registry import OPTIM_WRAPPER_CONSTRUCTORS


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class LayerDecayLrMultOptimWrapperConstructor(
        LearningRateDecayOptimWrapperConstructor):
    """mmpretrain's layer-wise lr decay constructor, plus ``lr_mult`` in
    ``paramwise_cfg.custom_keys``.

    mmpretrain's constructor sets every group's lr to
    ``base_lr * layer_decay_rate ** (max_depth - depth - 1)`` and ignores an
    ``lr_mult`` of a custom key; this subclass multiplies it in afterwards,
    e.g. DINOv2's patch-embedding lr x0.2::

        paramwise_cfg=dict(layer_decay_rate=0.9, flat_decay_mult=0.0,
                           custom_keys={'patch_embed': dict(lr_mult=0.2)})

    The longest matching key wins (mmengine's rule).
    """

    def add_params(self,
                   params: List[dict],
                   module: nn.Module,
                   prefix: str = '',
                   **kwargs) -> None:
        super().add_params(params, module, prefix=prefix, **kwargs)
        if prefix != '':
            return
        custom_keys = self.paramwise_cfg.get('custom_keys', {})
        keys = sorted(sorted(custom_keys), key=len, reverse=True)
        for group in params:
            name = group.get('param_name', '')
            key = next((k for k in keys if k in name), None)
            if key is None:
                continue
            group.pop('lr_mult', None)
            mult = custom_keys[key].get('lr_mult', 1.0)
            group['lr'] = group['lr'] * mult
            group['lr_scale'] = group.get('lr_scale', 1.0) * mult
