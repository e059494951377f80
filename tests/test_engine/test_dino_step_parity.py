"""Full-step parity of mmssl's DINOv2 with facebookresearch/dinov2, of its
DINO v1 with facebookresearch/dino, and of its DINOv3 (Gram off and on)
with facebookresearch/dinov3.

The fixture (tests/data/parity/dinov2_steps.pt) holds 5 steps of the
reference's own training step, recorded by
.dev_scripts/record_reference_steps.py from a checkout (its commit is in the
fixture's metadata): the weights after each step and the loss terms, in
float64 on the CPU. The 5 steps cross the end of the frozen last layer
(2 iterations), of the teacher-temperature warm-up (2) and of the lr
warm-up (4), with gradient clipping active in every student module.
.dev_scripts/record_dino_v1_steps.py records the DINO v1 fixture
(dino_v1_steps.pt) the same way: per-tensor clipping, dropped last-layer
gradients in epoch 0, the teacher temperature per epoch, centring.
.dev_scripts/record_dinov3_steps.py records the DINOv3 fixtures
(dinov3_steps.pt, dinov3_gram_steps.pt): 4 steps of dinov3's SSLMetaArch
with separate DINO and iBOT heads, per-module clipping, the zero-lr
freeze, and with --gram the Gram term and its refreshed Gram teacher.
"""

import pytest
import torch

from tests.support.dino_parity import (
    FIXTURE,
    FIXTURE_V1,
    build_cfg,
    build_cfg_v1,
    run_mmssl_steps,
)
from tests.support.dinov3_parity import (
    FIXTURE_V3,
    FIXTURE_V3_GRAM,
    build_cfg_v3,
    run_dinov3_steps,
)

TOL = 1e-6


def _load(path):
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    return torch.load(path, weights_only=False)


@pytest.fixture(scope='module')
def fixture():
    return _load(FIXTURE)


@pytest.fixture(scope='module')
def fixture_v1():
    return _load(FIXTURE_V1)


@pytest.fixture(scope='module')
def fixture_v3():
    return dict(off=_load(FIXTURE_V3), on=_load(FIXTURE_V3_GRAM))


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-30))


def _v3_terms(loss, s):
    """dinov3's weighted terms: the DINO CE over all crop pairs but a
    global crop with itself (local and global parts weighed by their pair
    counts), KoLeo x weight summed over the 2 global crops."""
    local, glob = 2 * s['n_local'], 2 * (2 - 1)
    out = dict(
        loss_dino_cls=(
            local * loss['dino_local_crops_loss']
            + glob * loss['dino_global_crops_loss']
        )
        / (local + glob),
        loss_koleo=s['koleo_weight'] * 2 * loss['koleo_loss'],
        loss_ibot_patch=loss['ibot_loss'],
    )
    if 'gram_loss' in loss:
        out['loss_gram'] = s['gram_weight'] * loss['gram_loss']
    return out


def _terms(loss, meta):
    if meta['reference'] == 'facebookresearch/dinov3':
        return _v3_terms(loss, meta['settings'])
    if 'dino' in loss:  # DINO v1: one term
        return dict(loss_dino=loss['dino'])
    return dict(  # the dinov2 loss_dict shows koleo and ibot halved
        loss_dino=loss['dino_local_crops_loss']
        + loss['dino_global_crops_loss'],
        loss_koleo=2 * loss['koleo_loss'],
        loss_ibot=2 * loss['ibot_loss'],
    )


def _worst(out, fixture):
    """Largest relative difference over every tensor and loss term."""
    worst = (0.0, '')
    for i, (ours, ref) in enumerate(zip(out, fixture['steps'])):
        theirs = _terms(ref['losses'], fixture['meta'])
        assert ours['losses'].keys() == theirs.keys()
        for key, value in theirs.items():
            worst = max(
                worst, (_rel(ours['losses'][key], value), f'{i} {key}')
            )
        for who in ('student', 'teacher', 'gram_teacher'):
            if who not in ref:  # the Gram teacher: when refreshed
                continue
            extra = set(ours[who]) - set(ref[who])
            assert extra <= {'backbone.mask_token'}  # DINO v1 has none
            assert set(ref[who]) <= set(ours[who])
            for key, value in ref[who].items():
                diff = _rel(ours[who][key], value)
                worst = max(worst, (diff, f'{i} {who} {key}'))
    return worst


def test_fixtures_name_the_reference(fixture, fixture_v1, fixture_v3):
    for fx, name in (
        (fixture, 'facebookresearch/dinov2'),
        (fixture_v1, 'facebookresearch/dino'),
        *((fx, 'facebookresearch/dinov3') for fx in fixture_v3.values()),
    ):
        meta = fx['meta']
        assert meta['reference'] == name
        assert len(meta['commit']) == 40
        assert len(fx['steps']) == meta['settings']['steps'] >= 3


def test_dinov2_steps_equal_the_reference(fixture):
    out = run_mmssl_steps(fixture)
    diff, where = _worst(out, fixture)
    assert diff < TOL, f'{where}: relative difference {diff:.3g}'


def _no_mask_token_decay(monkeypatch):
    """mmssl's old rule: the mask token is 1-D, so it does not decay."""
    from mmssl.engine.optimizers import layer_decay_optim_wrapper_constructor

    rule = layer_decay_optim_wrapper_constructor.dinov2_decays

    def old_rule(module):
        return {
            k: v and 'mask_token' not in k for k, v in rule(module).items()
        }

    monkeypatch.setattr(
        layer_decay_optim_wrapper_constructor, 'dinov2_decays', old_rule
    )


@pytest.mark.parametrize('breakage', ['global_clip', 'mask_token', 'grads'])
def test_each_reference_rule_matters(fixture, breakage, monkeypatch):
    """Each rule the parity rests on moves the result past the tolerance
    when it goes back to mmssl's old behaviour."""
    cfg = build_cfg(fixture['meta']['settings'])
    mode = 'zero_lr'
    if breakage == 'global_clip':
        cfg.optim_wrapper.clip_grad.scope = 'global'
    elif breakage == 'mask_token':
        _no_mask_token_decay(monkeypatch)
    else:  # the last layer's moments do not accumulate while frozen
        mode = 'drop_grad'
    out = run_mmssl_steps(fixture, cfg, freeze_mode=mode)
    assert _worst(out, fixture)[0] > 100 * TOL


def test_dino_v1_steps_equal_the_reference(fixture_v1):
    out = run_mmssl_steps(fixture_v1)
    diff, where = _worst(out, fixture_v1)
    assert diff < TOL, f'{where}: relative difference {diff:.3g}'


@pytest.mark.parametrize('breakage', ['global_clip', 'zero_lr'])
def test_each_dino_v1_rule_matters(fixture_v1, breakage):
    """A global clip, or dinov2's zero-lr freeze, is not DINO v1's step."""
    cfg = build_cfg_v1(fixture_v1['meta']['settings'])
    mode = None
    if breakage == 'global_clip':
        cfg.optim_wrapper.clip_grad.scope = 'global'
    else:
        mode = 'zero_lr'
    out = run_mmssl_steps(fixture_v1, cfg, freeze_mode=mode)
    assert _worst(out, fixture_v1)[0] > 100 * TOL


@pytest.mark.parametrize('gram', ['off', 'on'])
def test_dinov3_steps_equal_the_reference(fixture_v3, gram):
    fixture = fixture_v3[gram]
    assert fixture['meta']['settings']['gram'] == (gram == 'on')
    out = run_dinov3_steps(fixture)
    if gram == 'on':  # the Gram term and teacher are compared too
        assert 'loss_gram' in out[0]['losses']
        assert sum('gram_teacher' in step for step in fixture['steps']) >= 2
    diff, where = _worst(out, fixture)
    assert diff < TOL, f'{where}: relative difference {diff:.3g}'


@pytest.mark.parametrize(
    'breakage',
    ['global_clip', 'mask_token', 'weight_norm', 'grads', 'gram_period'],
)
def test_each_dinov3_rule_matters(fixture_v3, breakage, monkeypatch):
    """A global clip, no decay on the mask token, DINO's weight-normalised
    prototype layer, dropped last-layer gradients, or a Gram teacher
    refreshed on another schedule each moves the result past the
    tolerance."""
    fixture = fixture_v3['on' if breakage == 'gram_period' else 'off']
    s = dict(fixture['meta']['settings'])
    cfg = build_cfg_v3(s)
    mode = 'zero_lr'
    if breakage == 'global_clip':
        cfg.optim_wrapper.clip_grad.scope = 'global'
    elif breakage == 'mask_token':
        _no_mask_token_decay(monkeypatch)
    elif breakage == 'weight_norm':
        cfg.model.head.weight_norm = cfg.model.patch_head.weight_norm = True
    elif breakage == 'grads':
        mode = 'drop_grad'
    else:
        s['gram_update_frequency'] += 1
        fixture = dict(fixture, meta=dict(fixture['meta'], settings=s))
    out = run_dinov3_steps(fixture, cfg, freeze_mode=mode)
    assert _worst(out, fixture)[0] > 100 * TOL
