# Copyright (c) mmssl contributors. All rights reserved.
"""Layer-wise lr decay that also honours ``lr_mult`` custom keys, with the
per-parameter groups fused by equal settings and a fused AdamW."""

from typing import Callable, Dict, List, Optional, Tuple

from mmengine.optim import OptimWrapper
from mmpretrain.engine.optimizers import (
    LearningRateDecayOptimWrapperConstructor,
)
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.instancenorm import _InstanceNorm

from mmssl.registry import OPTIM_WRAPPER_CONSTRUCTORS

_NORMS = (_BatchNorm, _InstanceNorm, nn.GroupNorm, nn.LayerNorm)
#: ``paramwise_cfg.decay_rule`` values
DECAY_RULES = ('mmpretrain', 'dinov2')


def dinov2_decays(module: nn.Module) -> Dict[str, bool]:
    """Parameter name -> whether it decays, by dinov2's rule.

    dinov2's ``get_params_groups_with_decay`` (Oquab et al., 2023) keeps
    weight decay off biases, norms and LayerScale (``.bias``, ``norm``,
    ``gamma`` in its names) and on everything else: the class, register
    and mask tokens and the position embedding decay, 1-D or not. Decided
    here by the owning module's type, so it holds whatever the layers are
    called (``ln1``, ``gamma1.weight``).
    """
    out = {}
    for mod_name, mod in module.named_modules():
        scale = 'LayerScale' in type(mod).__name__
        no_decay = isinstance(mod, _NORMS) or scale
        prefix = f'{mod_name}.' if mod_name else ''
        for name, _ in mod.named_parameters(recurse=False):
            out[prefix + name] = not (no_decay or name == 'bias')
    return out


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

    ``paramwise_cfg.decay_rule='dinov2'`` decides each parameter's weight
    decay as dinov2 does (:func:`dinov2_decays`: no decay on biases,
    norms and LayerScale, decay on all else, the 1-D mask token included;
    ``custom_keys`` then only add ``lr_mult``), and marks the heads'
    ``last_layer`` groups ``is_last_layer`` (kept apart by the fusing, for
    ``FreezeLastLayerHook(mode='zero_lr')``). The default
    ``'mmpretrain'`` keeps mmpretrain's rules below.

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
        rule = self.paramwise_cfg.get('decay_rule', 'mmpretrain')
        if rule not in DECAY_RULES:
            raise ValueError(
                f'paramwise_cfg.decay_rule must be one of {DECAY_RULES}, '
                f'got {rule!r}.'
            )
        decays = dinov2_decays(module) if rule == 'dinov2' else None
        for group in params:
            if decays is not None and 'weight_decay' in group:
                name = group['param_name']
                group['weight_decay'] = self.base_wd * decays[name]
                # a group of its own, so its lr can be scheduled apart
                group['is_last_layer'] = 'last_layer' in name
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
