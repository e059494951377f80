# Copyright (c) mmssl contributors. All rights reserved.
"""Layer-wise lr decay that also honours ``lr_mult`` custom keys, with the
per-parameter groups fused by equal settings and a fused AdamW."""

from typing import Callable, List, Optional, Tuple

from mmengine.optim import OptimWrapper
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


# Keys of mmpretrain's per-parameter groups that name one parameter; all
# the other keys (lr, lr_scale, weight_decay, custom options) are settings.
_PER_PARAM_KEYS = ('params', 'param_name', 'layer_id')
# torch optimizers with a ``fused`` implementation (one kernel per step).
_FUSABLE = ('Adam', 'AdamW', 'SGD', 'Adagrad')


def fuse_param_groups(groups: List[dict]) -> List[dict]:
    """Merge parameter groups whose settings are all equal.

    Groups keep the order of their first parameter; each fused group keeps
    its parameters' names in ``param_names`` (as torch optimizers do) and
    their layer depths in ``layer_ids``. Element-wise optimizers (SGD,
    Adam, AdamW) give the same result with fused and unfused groups; the
    step just launches fewer, larger kernels.

    Args:
        groups (list[dict]): Groups with one or more ``params`` each.

    Returns:
        list[dict]: The fused groups.
    """
    fused: dict = {}
    for group in groups:
        settings = {k: v for k, v in group.items() if k not in _PER_PARAM_KEYS}
        key = repr(sorted(settings.items()))
        if key not in fused:
            fused[key] = dict(
                settings, params=[], param_names=[], layer_ids=[]
            )
        target = fused[key]
        target['params'].extend(group['params'])
        names = group.get('param_name', '')
        target['param_names'].extend(
            [names] * len(group['params']) if isinstance(names, str) else names
        )
        target['layer_ids'].append(group.get('layer_id'))
    return list(fused.values())


def _fused_supported(model: nn.Module) -> bool:
    """Whether torch has fused optimizer kernels for the model's device."""
    param = next(model.parameters(), None)
    if param is None or not param.is_floating_point():
        return False
    try:
        from torch.utils._foreach_utils import (
            _get_fused_kernels_supported_devices,
        )
    except ImportError:  # older torch: no fused CPU kernels either
        return param.device.type == 'cuda'
    return param.device.type in _get_fused_kernels_supported_devices()


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

    Speed: mmpretrain makes one parameter group per parameter (183 for a
    DINOv2 ViT-S/14 with heads). Groups with equal settings (lr scale,
    weight decay, custom options) are fused into one
    (``paramwise_cfg.fuse_param_groups``, default True; about 30 groups for
    ViT-S), and Adam / AdamW / SGD / Adagrad use torch's fused kernels
    (``fused=True``) where torch has them for the model's device, unless
    the optimizer config sets ``fused`` or ``foreach`` itself. Param
    schedulers keep working: mmengine scales each group's own initial
    value. Optimizer states saved with unfused groups (before this option
    existed) need ``fuse_param_groups=False`` to be resumed.

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
        if self.paramwise_cfg.get('fuse_param_groups', True):
            params[:] = fuse_param_groups(params)

    def __call__(self, model: nn.Module) -> OptimWrapper:
        """Build the optim wrapper; prefer fused kernels (see class doc)."""
        module = getattr(model, 'module', model)
        cfg = self.optimizer_cfg
        kind = cfg.get('type')
        name = kind if isinstance(kind, str) else getattr(kind, '__name__', '')
        if (
            name.split('.')[-1] in _FUSABLE
            and 'fused' not in cfg
            and 'foreach' not in cfg
            and _fused_supported(module)
        ):
            self.optimizer_cfg = dict(cfg, fused=True)
            try:
                return super().__call__(model)
            finally:
                self.optimizer_cfg = cfg
        return super().__call__(model)
