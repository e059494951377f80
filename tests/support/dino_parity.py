"""mmssl's side of the DINOv2 full-step parity test.

``.dev_scripts/record_reference_steps.py`` records N steps of
facebookresearch/dinov2 (weights after each step, loss terms) in a
fixture; :func:`run_mmssl_steps` runs the same N steps with mmssl's own
pieces, built from the DINOv2 recipe's configs: the model, the
``NaNGuardOptimWrapper`` with ``LayerDecayOptimWrapperConstructor``
(configs/_base_/schedules/dinov2_adamw.py), the lr / weight-decay param
schedulers (dino_family_lr_wd.py), and the hooks of
teacher_student_hooks.py (``TeacherEMAHook``, ``TeacherTempWarmupHook``,
``FreezeLastLayerHook``), called in the order mmengine's loop calls them.
"""

import copy
import os.path as osp
import types

import torch
from mmengine.config import Config
from mmengine.hooks import ParamSchedulerHook
from mmengine.logging import MessageHub
from mmengine.optim import build_optim_wrapper
from mmpretrain.structures import DataSample

from mmssl.checkpoint.layouts.dinov2 import dinov2_to_mmssl, mmssl_to_dinov2
from mmssl.models.algorithms.dino_parts import MASK_BOUND_KEY
from mmssl.registry import HOOKS, MODELS, PARAM_SCHEDULERS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
FIXTURE = osp.join(ROOT, 'tests', 'data', 'parity', 'dinov2_steps.pt')
FIXTURE_V1 = osp.join(ROOT, 'tests', 'data', 'parity', 'dino_v1_steps.pt')
CONFIG = osp.join(
    ROOT, 'configs', 'dinov2', 'dinov2_vit-tiny-p4_1xb64-10e_demo.py'
)
CONFIG_V1 = osp.join(
    ROOT, 'configs', 'dino', 'dino_vit-s16_8xb128-100e_in1k.py'
)
# mmssl head key <-> dinov2 head key (weight norm: g, v)
_HEAD = (
    ('last_layer.parametrizations.weight.original0', 'last_layer.weight_g'),
    ('last_layer.parametrizations.weight.original1', 'last_layer.weight_v'),
)


def to_mmssl(ref_state, prefix=''):
    """dinov2 ``backbone.* / dino_head.*`` -> mmssl ``backbone.* / head.*``."""
    backbone = {
        k[len('backbone.') :]: v
        for k, v in ref_state.items()
        if k.startswith('backbone.')
    }
    out = {
        f'{prefix}backbone.{k}': v
        for k, v in dinov2_to_mmssl(backbone).items()
    }
    for key, value in ref_state.items():
        if key.startswith('dino_head.'):
            rest = key[len('dino_head.') :]
            for ours, theirs in _HEAD:
                rest = rest.replace(theirs, ours)
            out[f'{prefix}head.{rest}'] = value
    return out


def to_reference(module_state):
    """mmssl student (or teacher) ``{backbone, head}`` state -> dinov2."""
    backbone = {
        k[len('backbone.') :]: v
        for k, v in module_state.items()
        if k.startswith('backbone.')
    }
    out = {f'backbone.{k}': v for k, v in mmssl_to_dinov2(backbone).items()}
    for key, value in module_state.items():
        if key.startswith('head.'):
            rest = key[len('head.') :]
            for ours, theirs in _HEAD:
                rest = rest.replace(ours, theirs)
            out[f'dino_head.{rest}'] = value
    return out


def _resize(cfg, s):
    """The recipe's model at the fixture's (tiny) size."""
    model = cfg.model
    model.backbone.arch = dict(
        embed_dims=s['embed'],
        num_layers=s['depth'],
        num_heads=s['heads'],
        feedforward_channels=int(s['embed'] * s['mlp_ratio']),
    )
    if model.backbone.type != 'DINOv3ViT':  # RoPE: no img_size
        model.backbone.img_size = s['global_size']
    model.backbone.patch_size = s['patch']
    model.backbone.drop_path_rate = 0.0
    model.head.update(
        n_prototypes=s['n_prototypes'],
        hidden_channels=s['head_hidden'],
        bottleneck_channels=s['head_bottleneck'],
    )
    if 'terms' in model:  # DINOFamily (DINOv3)
        model.terms.dino_cls.out_dim = s['n_prototypes']
    else:
        model.loss.out_dim = s['n_prototypes']
    model.pop('data_preprocessor', None)
    ow = cfg.optim_wrapper
    ow.optimizer.lr = s['lr']
    ow.optimizer.weight_decay = s['weight_decay']
    ow.clip_grad.max_norm = s['clip_grad']
    return cfg


def build_cfg(s):
    """The DINOv2 demo recipe resized to the fixture's run."""
    cfg = _resize(Config.fromfile(CONFIG), s)
    model = cfg.model
    model.backbone.layer_scale_init_value = 1e-5
    model.ibot_loss.out_dim = s['n_prototypes']
    model.loss_weights = dict(dino=1.0, ibot=1.0, koleo=s['koleo_weight'])
    ow = cfg.optim_wrapper
    ow.paramwise_cfg.layer_decay_rate = s['layerwise_decay']
    ow.paramwise_cfg.custom_keys.patch_embed.lr_mult = s['patch_embed_lr_mult']
    return cfg


def build_cfg_v1(s):
    """The DINO v1 ViT-S/16 ImageNet recipe resized to the fixture's run."""
    return _resize(Config.fromfile(CONFIG_V1), s)


def build_schedulers(optim_wrapper, s, v1=False):
    """dino_family_lr_wd.py's three schedulers, in iterations (dinov2 ends
    each group's cosine at min_lr x its lr multiplier: eta_min_ratio)."""
    e = s['epoch_length']
    warm, total = s['warmup_epochs'] * e, s['epochs'] * e
    cfgs = [
        dict(type='LinearWarmupLR', start_factor=0.0, begin=0, end=warm),
        dict(
            type='CosineAnnealingLR',
            begin=warm,
            end=total,
            **(
                dict(eta_min=s['min_lr'])
                if v1
                else dict(eta_min_ratio=s['min_lr'] / s['lr'])
            ),
        ),
        dict(
            type='CosineAnnealingParamScheduler',
            param_name='weight_decay',
            eta_min_ratio=s['weight_decay_end'] / s['weight_decay'],
            begin=0,
            end=total,
        ),
    ]
    return [
        PARAM_SCHEDULERS.build(
            dict(c, optimizer=optim_wrapper, by_epoch=False)
        )
        for c in cfgs
    ]


def build_hooks(s, freeze_mode='zero_lr', v1=False):
    """teacher_student_hooks.py's hooks: per-iteration temperature and a
    zero lr freeze (DINOv2), per-epoch temperature and dropped gradients
    (DINO v1)."""
    return [
        HOOKS.build(h)
        for h in (
            dict(
                type='TeacherEMAHook',
                momentum=s['momentum'],
                end_momentum=s.get('final_momentum', 1.0),
            ),
            dict(
                type='TeacherTempWarmupHook',
                warmup_temp=s['warmup_teacher_temp'],
                temp=s['teacher_temp'],
                warmup_epochs=s['warmup_teacher_temp_epochs'],
                by_epoch=v1,
            ),
            dict(
                type='FreezeLastLayerHook',
                freeze_epochs=s.get(
                    'freeze_last_layer_epochs', s.get('freeze_last_layer')
                ),
                mode=freeze_mode,
            ),
        )
    ]


def make_inputs(batch, s):
    """The fixture's crops (and masks) as mmssl's loss reads them."""
    if 'views' in batch:  # DINO v1: one tensor per crop, no masks
        return list(batch['views']), [DataSample() for _ in range(s['batch'])]
    b, g = s['batch'], batch['collated_global_crops']
    loc = batch['collated_local_crops']
    views = list(g.split(b)) + list(loc.split(b))  # crop-major
    if 'collated_gram_teacher_crops' in batch:  # DINOv3: then Gram crops
        views += list(batch['collated_gram_teacher_crops'].split(b))
    grid = s['global_size'] // s['patch']
    masks = batch['collated_masks'].view(2, b, grid, grid)
    samples = []
    for i in range(b):
        sample = DataSample(metainfo={MASK_BOUND_KEY: batch['upperbound']})
        sample.mask = masks[:, i]
        samples.append(sample)
    return views, samples


def run_mmssl_steps(fixture, cfg=None, freeze_mode=None):
    """Run the fixture's N steps with mmssl; per step its loss terms and
    the student and teacher weights in the reference's layout."""
    s = fixture['meta']['settings']
    v1 = fixture['meta']['reference'] == 'facebookresearch/dino'
    cfg = cfg or (build_cfg_v1(s) if v1 else build_cfg(s))
    freeze_mode = freeze_mode or ('drop_grad' if v1 else 'zero_lr')
    hooks = build_hooks(s, freeze_mode, v1)
    return run_steps(fixture, cfg, hooks, to_mmssl, to_reference, v1)


def run_steps(fixture, cfg, hooks, to_ours, to_theirs, v1=False):
    """The loop of mmssl's runner over the fixture's N steps: the model
    from ``cfg`` loaded with the fixture's weights (``to_ours``), the
    optimizer wrapper and schedulers, ``hooks`` in the loop's order; per
    step the loss terms and the weights back in the reference's layout
    (``to_theirs``)."""
    s = fixture['meta']['settings']
    torch.manual_seed(0)
    model = MODELS.build(copy.deepcopy(cfg.model)).double()
    state = to_ours(fixture['init'])
    state.update(to_ours(fixture['init'], prefix='teacher.'))
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and not [
        k
        for k in missing
        if not k.startswith(('gram', 'dino_loss', 'ibot_loss'))
        and not k.endswith('mask_token')  # DINO v1 has none
    ], (missing, unexpected)
    model.train()
    optim_wrapper = build_optim_wrapper(
        model, copy.deepcopy(cfg.optim_wrapper)
    )
    runner = types.SimpleNamespace(
        model=model,
        optim_wrapper=optim_wrapper,
        iter=0,
        epoch=0,
        max_iters=s['epochs'] * s['epoch_length'],
        train_dataloader=[None] * s['epoch_length'],
        message_hub=MessageHub.get_instance('dino_parity'),
    )
    runner.param_schedulers = build_schedulers(optim_wrapper, s, v1)
    hooks = list(hooks) + [ParamSchedulerHook()]
    for hook in hooks:
        hook.before_train(runner)
    views, samples = make_inputs(fixture['batch'], s)
    out = []
    for it in range(s['steps']):
        runner.iter, runner.epoch = it, it // s['epoch_length']
        for hook in hooks:
            hook.before_train_iter(runner, it % s['epoch_length'])
        with optim_wrapper.optim_context(model):
            losses = model.loss(views, samples)
        loss, _ = model.parse_losses(losses)
        optim_wrapper.update_params(loss)
        for hook in hooks:
            hook.after_train_iter(runner, it % s['epoch_length'])
        out.append(snapshot(model, losses, to_theirs))
    for hook in hooks:
        hook.after_train(runner)
    return out


def snapshot(model, losses, to_theirs):
    """Loss terms, and student / teacher (/ Gram teacher) weights in the
    reference's layout."""
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def part(prefix):
        return {
            k[len(prefix) :]: v
            for k, v in state.items()
            if k.startswith(prefix)
        }

    out = dict(
        # loss terms only: the logged entropies are no loss term
        losses={
            k: v.detach().clone()
            for k, v in losses.items()
            if k.startswith('loss')
        },
        student=to_theirs(
            {
                k: v
                for k, v in state.items()
                if not k.startswith(('teacher.', 'gram'))
            }
        ),
        teacher=to_theirs(part('teacher.')),
    )
    if hasattr(model, 'gram_teacher'):
        gram = {f'backbone.{k}': v for k, v in part('gram_teacher.').items()}
        out['gram_teacher'] = to_theirs(gram)
    return out
