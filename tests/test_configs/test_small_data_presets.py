"""The small-data presets (ViT-S, 1 GPU x 64, 5k-50k images) of DINO,
iBOT, DINOv2 and DINOv3 follow the rules their READMEs state.

Each preset derives from a reference recipe (ImageNet for DINO / iBOT /
DINOv2, the 100-epoch stage-1 config for DINOv3). Every value that differs
from that recipe must be one the README's "Small-data preset: why these
values" section explains: a new, undocumented difference fails here. The
lr must follow the paper's batch rule from the paper's reference batch,
``--auto-scale-lr`` must rescale from the preset's own batch with the same
rule, the prototypes must agree across head and losses, and the warm-ups
must keep the recipe's length in epochs and stay shorter than the run.
Configs are only parsed, never built: the whole file takes seconds.
"""

import functools
import math
import os.path as osp

import pytest
from mmengine.config import Config

from mmssl.config.run_length import parse_fraction

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SECTION = 'Small-data preset: why these values'

#: preset -> (recipe, lr rule, base lr, reference batch, prototypes)
PRESETS = {
    'dino/dino_vit-s16_1xb64-200e_custom-small.py': dict(
        recipe='dino/dino_vit-s16_8xb128-100e_in1k.py',
        rule='linear',  # DINO: lr = 0.0005 x batch / 256
        base_lr=0.0005,
        ref_batch=256,
        prototypes=16384,
    ),
    'ibot/ibot_vit-s16_1xb64-200e_custom-small.py': dict(
        recipe='ibot/ibot_vit-s16_8xb128-100e_in1k.py',
        rule='linear',  # iBOT keeps DINO's rule
        base_lr=0.0005,
        ref_batch=256,
        prototypes=8192,
    ),
    'dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py': dict(
        recipe='dinov2/dinov2_vit-s14_8xb128-100e_in1k.py',
        rule='sqrt',  # DINOv2: lr = 0.004 x sqrt(batch / 1024)
        base_lr=0.004,
        ref_batch=1024,
        prototypes=16384,
    ),
    'dinov3/dinov3_vit-s16_1xb64-200e_custom-small.py': dict(
        recipe='dinov3/dinov3_vit-s16_1xb64-100e_custom.py',
        rule='sqrt',
        base_lr=0.004,
        ref_batch=1024,
        prototypes=16384,
    ),
}

_SCHEDULE = {
    'train_cfg.max_epochs',  # 200 epochs
    'param_scheduler.0.end',  # lr warm-up: 10 epochs = 5%
    'TeacherTempWarmupHook.warmup_epochs',  # 30 epochs = 15%
    'FreezeLastLayerHook.freeze_epochs',  # 1 epoch = 0.5%
    'default_hooks.checkpoint.interval',  # every 5 epochs
}
_ONE_GPU = {
    'train_dataloader.batch_size',
    'optim_wrapper.optimizer.lr',
    'auto_scale_lr.base_batch_size',
    'train_dataloader.dataset.data_root',
}
_COSINE = {'param_scheduler.1.begin'}  # the cosine starts after warm-up
_HEAD = {'model.head.n_prototypes', 'model.loss.out_dim'}
#: every key that may differ from the recipe (each explained in README)
DOCUMENTED_CHANGES = {
    'dino/dino_vit-s16_1xb64-200e_custom-small.py': _SCHEDULE
    | _ONE_GPU
    | _COSINE
    | _HEAD
    | {'TeacherEMAHook.momentum'},
    'ibot/ibot_vit-s16_1xb64-200e_custom-small.py': _SCHEDULE
    | _ONE_GPU
    | _COSINE
    | {'TeacherEMAHook.momentum'},
    'dinov2/dinov2_vit-s14_1xb64-200e_custom-small.py': _SCHEDULE
    | _ONE_GPU
    | _COSINE
    | _HEAD
    | {'model.ibot_loss.out_dim'},
    'dinov3/dinov3_vit-s16_1xb64-200e_custom-small.py': _SCHEDULE,
}


@functools.lru_cache(maxsize=None)
def _load(name: str) -> Config:
    """Parsed once per session; the tests only read it."""
    return Config.fromfile(osp.join(ROOT, 'configs', name))


def _flat(node, prefix='') -> dict:
    """{dotted key: leaf}; hooks keyed by type so order does not matter."""
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, (list, tuple)) and prefix == 'custom_hooks':
        items = ((h['type'], h) for h in node)
        prefix = ''
    elif isinstance(node, (list, tuple)):
        items = enumerate(node)
    else:
        return {prefix: node}
    out = {}
    for key, value in items:
        out.update(_flat(value, f'{prefix}.{key}' if prefix else str(key)))
    return out


def _hook(cfg: Config, type_: str) -> dict:
    return next(h for h in cfg.custom_hooks if h.type == type_)


def _epochs(value, max_epochs: int) -> float:
    """A schedule length (a run fraction, '15%' or '1/200', or epochs)
    in epochs."""
    fraction = parse_fraction(value)
    return float(value) if fraction is None else fraction * max_epochs


def _prototypes(cfg: Config) -> set:
    model = cfg.model
    sizes = {model.head.n_prototypes}
    losses = dict(model.get('terms') or {})
    losses.update(loss=model.get('loss'), ibot_loss=model.get('ibot_loss'))
    sizes |= {v.out_dim for v in losses.values() if v and 'out_dim' in v}
    return sizes


@pytest.mark.parametrize('name', sorted(PRESETS))
def test_only_documented_changes_from_the_recipe(name):
    preset = _flat(_load(name).to_dict())
    recipe = _flat(_load(PRESETS[name]['recipe']).to_dict())
    changed = {
        k
        for k in set(preset) | set(recipe)
        if preset.get(k, '<absent>') != recipe.get(k, '<absent>')
    }
    assert changed == DOCUMENTED_CHANGES[name], (
        f'{name} differs from {PRESETS[name]["recipe"]} in '
        f'{sorted(changed - DOCUMENTED_CHANGES[name])} (undocumented) and '
        f'no longer in {sorted(DOCUMENTED_CHANGES[name] - changed)}: '
        f'explain the change in the README section "{SECTION}" and list '
        'it in DOCUMENTED_CHANGES'
    )


@pytest.mark.parametrize('name', sorted(PRESETS))
def test_lr_follows_the_documented_batch_rule(name):
    spec, cfg = PRESETS[name], _load(name)
    batch = cfg.train_dataloader.batch_size
    assert batch == 64  # one GPU x 64
    ratio = batch / spec['ref_batch']
    factor = ratio if spec['rule'] == 'linear' else math.sqrt(ratio)
    lr = cfg.optim_wrapper.optimizer.lr
    assert lr == pytest.approx(spec['base_lr'] * factor, rel=1e-9), (
        f'{name}: lr {lr} is not {spec["base_lr"]} x {spec["rule"]}'
        f'({batch} / {spec["ref_batch"]})'
    )
    # --auto-scale-lr then rescales the preset's own lr with the same rule
    assert cfg.auto_scale_lr.base_batch_size == batch
    assert cfg.auto_scale_lr.rule == spec['rule']


@pytest.mark.parametrize('name', sorted(PRESETS))
def test_prototypes_agree_and_are_not_larger_than_the_recipe(name):
    cfg, recipe = _load(name), _load(PRESETS[name]['recipe'])
    assert _prototypes(cfg) == {PRESETS[name]['prototypes']}
    assert PRESETS[name]['prototypes'] <= min(_prototypes(recipe))


@pytest.mark.parametrize('name', sorted(PRESETS))
def test_warmups_keep_the_recipe_epochs_and_fit_in_the_run(name):
    cfg, recipe = _load(name), _load(PRESETS[name]['recipe'])
    n, n_ref = cfg.train_cfg.max_epochs, recipe.train_cfg.max_epochs
    assert n == 200 and n > n_ref

    def lengths(c, epochs):
        temp = _hook(c, 'TeacherTempWarmupHook')
        return dict(
            lr=_epochs(c.param_scheduler[0].end, epochs),
            temp=_epochs(temp.warmup_epochs, epochs),
            freeze=_epochs(
                _hook(c, 'FreezeLastLayerHook').freeze_epochs, epochs
            ),
        )

    got, ref = lengths(cfg, n), lengths(recipe, n_ref)
    assert got == pytest.approx(ref), f'{name}: warm-ups {got} != {ref}'
    assert 0 < got['freeze'] < got['lr'] <= got['temp'] < n / 4
    # the cosine (where there is one) starts where the lr warm-up ends
    if len(cfg.param_scheduler) > 1:
        assert cfg.param_scheduler[1].begin == cfg.param_scheduler[0].end


@pytest.mark.parametrize('name', sorted(PRESETS))
def test_readme_explains_the_preset(name):
    algo, config = name.split('/')
    with open(osp.join(ROOT, 'configs', algo, 'README.md')) as f:
        readme = f.read()
    assert f'## {SECTION}' in readme, f'configs/{algo}/README.md'
    section = readme.split(f'## {SECTION}', 1)[1].split('\n## ', 1)[0]
    assert config in section
    assert f'{PRESETS[name]["prototypes"]} prototypes' in section
    assert f"rule='{PRESETS[name]['rule']}'" in section
