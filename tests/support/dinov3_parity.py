"""mmssl's side of the DINOv3 full-step parity test.

``.dev_scripts/record_dinov3_steps.py`` records N steps of
facebookresearch/dinov3 (Gram off, and Gram on) in a fixture;
:func:`run_dinov3_steps` runs them with mmssl's own pieces, built from the
DINOv3 demo recipe (configs/dinov3/dinov3_vit-tiny-p4_1xb64-10e_demo.py,
resized): the model with its separate iBOT head and the Gram term, the
``NaNGuardOptimWrapper`` with ``LayerDecayOptimWrapperConstructor``, the
lr / weight-decay schedulers of ``dino_family_lr_wd.py`` (the reference's
default ``build_schedulers``), and ``TeacherEMAHook``,
``TeacherTempWarmupHook``, ``FreezeLastLayerHook`` and
``GramTeacherHook``, in the loop's order (the shared loop of
:mod:`tests.support.dino_parity`).
"""

import os.path as osp

from mmengine.config import Config

from mmssl.checkpoint.layouts.dinov3 import dinov3_to_mmssl, mmssl_to_dinov3
from mmssl.registry import HOOKS

from .dino_parity import ROOT, _resize, build_hooks, run_steps

FIXTURE_V3 = osp.join(ROOT, 'tests', 'data', 'parity', 'dinov3_steps.pt')
FIXTURE_V3_GRAM = osp.join(
    ROOT, 'tests', 'data', 'parity', 'dinov3_gram_steps.pt'
)
CONFIG_V3 = osp.join(
    ROOT, 'configs', 'dinov3', 'dinov3_vit-tiny-p4_1xb64-10e_demo.py'
)
# dinov3 student module -> mmssl module
_HEADS = (('dino_head.', 'head.'), ('ibot_head.', 'patch_head.'))


def to_mmssl(ref_state, prefix=''):
    """dinov3 ``backbone.* / dino_head.* / ibot_head.*`` -> mmssl."""
    backbone = {
        k[len('backbone.') :]: v
        for k, v in ref_state.items()
        if k.startswith('backbone.')
    }
    out = {
        f'{prefix}backbone.{k}': v
        for k, v in dinov3_to_mmssl(backbone).items()
    }
    for key, value in ref_state.items():
        for theirs, ours in _HEADS:
            if key.startswith(theirs):
                out[prefix + ours + key[len(theirs) :]] = value
    return out


def to_reference(module_state):
    """mmssl student (teacher) ``{backbone, head, patch_head}`` -> dinov3."""
    backbone = {
        k[len('backbone.') :]: v
        for k, v in module_state.items()
        if k.startswith('backbone.')
    }
    out = {f'backbone.{k}': v for k, v in mmssl_to_dinov3(backbone).items()}
    for key, value in module_state.items():
        for theirs, ours in _HEADS:
            if key.startswith(ours):
                out[theirs + key[len(ours) :]] = value
    return out


def build_cfg_v3(s):
    """The DINOv3 demo recipe resized to the fixture's run."""
    cfg = _resize(Config.fromfile(CONFIG_V3), s)
    model = cfg.model
    model.backbone.update(
        num_register_tokens=s['n_registers'],
        layer_scale_init_value=1e-5,
        rope_rescale_coords=None,  # the reference's default: no jitter
    )
    model.patch_head = model.head
    terms = model.terms
    terms.ibot_patch.out_dim = s['n_prototypes']
    terms.koleo.weight = s['koleo_weight']
    if s['gram']:
        terms.gram.weight = s['gram_weight']
        model.num_gram_crops = 2
    else:
        terms.pop('gram')
    ow = cfg.optim_wrapper
    ow.paramwise_cfg.layer_decay_rate = s['layerwise_decay']
    ow.paramwise_cfg.custom_keys.patch_embed.lr_mult = s['patch_embed_lr_mult']
    return cfg


def build_hooks_v3(s, freeze_mode='zero_lr'):
    """The DINOv2 hooks, and ``GramTeacherHook`` as dinov3's Gram teacher
    rule: the EMA teacher before iteration 0, then after every
    ``update_frequency`` iterations."""
    hooks = build_hooks(s, freeze_mode)
    if s['gram']:
        hooks.insert(
            0,
            HOOKS.build(
                dict(
                    type='GramTeacherHook',
                    first_update=0,
                    period=s['gram_update_frequency'],
                )
            ),
        )
    return hooks


_G = 'last_layer.parametrizations.weight.original0'
_V = 'last_layer.parametrizations.weight.original1'


def _weight_normed(state):
    """A plain prototype layer's weight -> weight norm's (g, v), the same
    weight (for DINOHead(weight_norm=True))."""
    out = {}
    for key, value in state.items():
        if key.endswith('last_layer.weight'):
            stem = key[: -len('last_layer.weight')]
            out[stem + _G] = value.norm(dim=1, keepdim=True)
            out[stem + _V] = value
        else:
            out[key] = value
    return out


def _weight_merged(state):
    """Weight norm's (g, v) -> the weight they make."""
    out = {k: v for k, v in state.items() if not k.endswith((_G, _V))}
    for key in [k for k in state if k.endswith(_G)]:
        stem = key[: -len(_G)]
        g, v = state[key], state[stem + _V]
        out[stem + 'last_layer.weight'] = g * v / v.norm(dim=1, keepdim=True)
    return out


def run_dinov3_steps(fixture, cfg=None, freeze_mode='zero_lr'):
    """Run the fixture's N steps with mmssl's DINOv3 (a head with
    ``weight_norm=True`` starts from the same prototype weights)."""
    s = fixture['meta']['settings']
    cfg = cfg or build_cfg_v3(s)
    hooks = build_hooks_v3(s, freeze_mode)
    ours, theirs = to_mmssl, to_reference
    if cfg.model.head.get('weight_norm', True):
        ours = lambda state, prefix='': _weight_normed(  # noqa: E731
            to_mmssl(state, prefix)
        )
        theirs = lambda state: to_reference(_weight_merged(state))  # noqa
    return run_steps(fixture, cfg, hooks, ours, theirs)
