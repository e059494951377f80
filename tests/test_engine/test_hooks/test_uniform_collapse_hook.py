"""UniformCollapseHook: one warning when loss_dino sits at ln K."""

import math
from types import SimpleNamespace

import pytest
import torch
from mmengine.hooks import Hook
from mmengine.logging import MessageHub

from mmssl.engine.hooks import RunSummaryHook, UniformCollapseHook
from mmssl.engine.hooks import uniform_collapse_hook as module
from tests.support.resume import tiny_cfg, train

DEMO = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'
LN_256 = math.log(256)


@pytest.fixture
def warnings(monkeypatch):
    said = []

    def record(msg, logger=None, level=20):
        if level >= 30:
            said.append(msg)

    monkeypatch.setattr(module, 'print_log', record)
    return said


def _model(k=256, weight=1.0):
    return SimpleNamespace(
        dino_loss=SimpleNamespace(out_dim=k),
        weight_keys=dict(dino_cls='dino'),
        loss_weights=dict(dino=weight),
    )


def _feed(hook, losses, entropies=None, name='uc', model=None):
    """Run the hook over iterations 1..N (interval 1) with these logged
    values; return the runner."""
    hub = MessageHub.get_instance(f'uniform_collapse_{name}')
    runner = SimpleNamespace(
        model=model or _model(),
        hooks=[hook],
        iter=0,
        max_iters=len(losses),
        message_hub=hub,
        train_dataloader=[None] * 10,
    )
    hook.before_train(runner)
    for i, loss in enumerate(losses):
        runner.iter = i
        if loss is not None:
            hub.update_scalar('train/loss_dino', loss)
        if entropies is not None:
            hub.update_scalar('train/dino_target_entropy', entropies[i])
        hook.after_train_iter(runner, i)
    return runner


def test_stuck_loss_warns_once_with_the_numbers_and_the_guide(warnings):
    hook = UniformCollapseHook(patience=3, begin=2, interval=1)
    # iterations 1-2 are before `begin`; 3-4 within 2 %, 5 not (resets),
    # 6, 7, 8 within: the warning at 8, and never again
    losses = [LN_256] * 4 + [6.0] + [LN_256 * 1.019] * 3 + [LN_256] * 6
    runner = _feed(hook, losses, name='stuck')
    assert len(warnings) == 1
    text = warnings[0]
    assert 'from iteration 6 to 8' in text
    assert 'ln K = ln 256 = 5.5452' in text
    assert f'loss_dino {LN_256 * 1.019:.4f}' in text
    assert "teacher's targets are uniform" in text
    assert 'learns nothing' in text
    assert "centering='centering'" in text and 'temperature' in text
    assert 'docs/en/loss_not_decreasing.md' in text
    assert hook.warning == text
    runner.cfg = {}
    runner.work_dir = '/tmp'
    lines = RunSummaryHook().summary_lines(runner)
    assert lines.count(f'warning: {text}') == 1


def test_healthy_or_weighted_loss_does_not_warn(warnings):
    falling = [LN_256 * (1 - 0.01 * i) for i in range(20)]  # leaves 2 %
    _feed(UniformCollapseHook(patience=3, begin=0, interval=1), falling)
    assert warnings == []
    # loss_dino = 0.5 * ln K is the fixed point of a term weighted 0.5
    hook = UniformCollapseHook(patience=2, begin=0, interval=1)
    _feed(hook, [0.5 * LN_256] * 3, name='w', model=_model(weight=0.5))
    assert len(warnings) == 1
    hook = UniformCollapseHook(patience=2, begin=0, interval=1)
    _feed(hook, [0.5 * LN_256] * 3, name='w1', model=_model(weight=1.0))
    assert len(warnings) == 1  # 0.5 ln K with weight 1 is not stuck
    local = _model()
    local.loss_weights['dino_local'] = 0.5  # the loss is not ln K then
    hook = UniformCollapseHook(patience=2, begin=0, interval=1)
    _feed(hook, [LN_256] * 3, name='w2', model=local)
    assert len(warnings) == 1


def test_target_entropy_alone_warns_and_other_models_are_skipped(warnings):
    hook = UniformCollapseHook(patience=2, begin=0, interval=1)
    _feed(hook, [3.0] * 3, entropies=[0.99] * 3, name='ent')
    assert len(warnings) == 1
    assert 'teacher target entropy 0.990 of ln K' in warnings[0]
    hook = UniformCollapseHook(patience=1, begin=0, interval=1)
    _feed(hook, [LN_256] * 3, name='mae', model=SimpleNamespace())
    assert hook.warning is None and len(warnings) == 1
    with pytest.raises(ValueError, match='patience must be >= 1, got 0'):
        UniformCollapseHook(patience=0)
    with pytest.raises(ValueError, match='tolerance must be in'):
        UniformCollapseHook(tolerance=2)


class _ZeroPrototypeGain(Hook):
    """Force the fixed point: the (frozen) prototype gain of the student
    and teacher heads at 0, so every logit is 0."""

    priority = 'VERY_HIGH'

    def before_train(self, runner) -> None:
        model = runner.model
        for head in (model.head, model.teacher['head']):
            gain = head.last_layer.parametrizations.weight.original0
            gain.data.zero_()


def _run(demo_data_root, tmp_path, force: bool):
    cfg = tiny_cfg(DEMO, demo_data_root, str(tmp_path), num_images=4)
    cfg.model.head.norm_last_layer = True  # gain frozen
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=6)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=100)
    cfg.custom_hooks.append(
        dict(type='UniformCollapseHook', patience=3, begin=0)
    )
    runner, _ = train(cfg, [_ZeroPrototypeGain()] if force else [])
    loss = runner.message_hub.get_scalar('train/loss_dino').current()
    return runner, loss


def test_a_run_at_the_fixed_point_warns_once(
    demo_data_root, tmp_path, warnings
):
    runner, loss = _run(demo_data_root, tmp_path / 'stuck', force=True)
    assert loss == pytest.approx(LN_256, rel=1e-5)
    entropy = runner.message_hub.get_scalar('train/dino_target_entropy')
    assert entropy.current() == pytest.approx(1.0, rel=1e-5)
    assert len(warnings) == 1, warnings
    summary = RunSummaryHook().summary_lines(runner)
    assert summary.count(f'warning: {warnings[0]}') == 1


def test_a_healthy_run_does_not_warn(demo_data_root, tmp_path, warnings):
    runner, loss = _run(demo_data_root, tmp_path / 'ok', force=False)
    assert abs(loss / LN_256 - 1) > 0.02, loss
    assert warnings == []
    assert torch.isfinite(torch.tensor(loss))
