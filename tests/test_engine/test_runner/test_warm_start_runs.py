"""Warm start and stage chaining in real runs of the DINOv2 demo (4 images,
batch 2): the previous stage's checkpoint, the head-only phase, the last
block unfrozen, and an exact resume in the middle of the schedule."""

import pytest
import torch

from mmssl.checkpoint import torch_load_safe
from tests.support.resume import max_abs_diff, resume_from, tiny_cfg, train

DEMO = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'


@pytest.fixture(autouse=True)
def _no_env_report(monkeypatch):
    monkeypatch.setattr('mmengine.runner.runner.collect_env', lambda: {})


def _cfg(root, work_dir, iters, **warm_start):
    cfg = tiny_cfg(
        DEMO,
        root,
        work_dir,
        train_cfg=dict(type='IterBasedTrainLoop', max_iters=iters),
        checkpoint=dict(interval=2, by_epoch=False, max_keep_ckpts=-1),
    )
    if warm_start:
        cfg.model.warm_start = warm_start  # the runner adds WarmStartHook
    return cfg


def _state(path):
    return torch_load_safe(path)


@pytest.mark.slow
def test_stages_chain_and_warm_start_schedule_resumes(
    demo_data_root, tmp_path
):
    stage1 = _cfg(demo_data_root, str(tmp_path / 's1'), 2)
    train(stage1)
    prev = _state(str(tmp_path / 's1' / 'iter_2.pth'))['state_dict']

    # stage 2 from the whole stage-1 model (student, teacher, heads)
    chained = _cfg(
        demo_data_root,
        str(tmp_path / 's2'),
        0,
        checkpoint=str(tmp_path / 's1' / 'iter_2.pth'),
        format='mmssl_full',
    )
    runner = train(chained)[0]
    now = runner.model.state_dict()
    assert all(torch.equal(now[k], prev[k]) for k in prev)

    # warm start of the backbone: heads alone for 2 iterations, then the
    # last block and the final norm with a 2-iteration ramp
    warm = _cfg(
        demo_data_root,
        str(tmp_path / 'w'),
        4,
        checkpoint=str(tmp_path / 's1' / 'iter_2.pth'),
        head_iters=2,
        unfreeze=1,
        ramp_iters=2,
    )
    straight = train(warm)[0]
    loaded = {
        k[len('teacher.backbone.') :]: v
        for k, v in prev.items()
        if k.startswith('teacher.backbone.')
    }
    at2 = _state(str(tmp_path / 'w' / 'iter_2.pth'))
    at4 = _state(str(tmp_path / 'w' / 'iter_4.pth'))['state_dict']
    assert at2['warm_start_hook'] == dict(
        head_iters=2, unfreeze=1, ramp_iters=2, start_iter=0
    )
    depth = 1 + max(int(k.split('.')[1]) for k in loaded if 'layers.' in k)
    for key, value in loaded.items():
        assert torch.equal(at2['state_dict']['backbone.' + key], value), key
        same = torch.equal(at4['backbone.' + key], value)
        top = key.startswith((f'layers.{depth - 1}.', 'ln1.'))
        if not top or key.endswith(('ln1.weight', 'qkv.weight')):
            assert same != top, key
    (tmp_path / 'r').mkdir()
    resumed = resume_from(
        warm, str(tmp_path / 'w' / 'iter_2.pth'), str(tmp_path / 'r')
    )[0]
    assert max_abs_diff(straight, resumed) == 0.0


@pytest.mark.parametrize(
    'warm_start, added',
    [
        (dict(checkpoint='x.pth'), False),  # no schedule: no hook
        (dict(checkpoint='x.pth', head_iters=5), True),
        (dict(checkpoint='x.pth', ramp_iters=5), True),
        (dict(checkpoint='x.pth', unfreeze=2), True),
    ],
)
def test_warm_start_schedule_adds_its_hook(warm_start, added):
    # (register_hooks skips a default hook whose type the config lists)
    from types import SimpleNamespace

    from mmengine.config import Config

    from mmssl.engine.runner.runner import SSLRunner

    fake = SimpleNamespace(
        cfg=Config(dict(model=dict(warm_start=warm_start))), distributed=False
    )
    types = [h['type'] for h in SSLRunner.default_custom_hooks(fake)]
    assert ('WarmStartHook' in types) == added
