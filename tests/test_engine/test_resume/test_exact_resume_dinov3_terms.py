"""Exact resume with a Gram teacher, weight schedules and batch masks.

The DINOv2 demo turned into a DINOv3-style run: ``DINOFamily`` with the
four terms, 48x48 Gram-teacher copies of the 32x32 global crops, the Gram
teacher refreshed before iterations 1 and 3 (``GramTeacherHook``), a Gram
weight ramp and a local-crop down-weighting (``LossWeightScheduleHook``),
and DINOv2's batch-level masks (``block_mask_collate``). Cut after
iteration 3 and resumed, every parameter and buffer (the Gram teacher and
its update count included) must match the straight run.
"""

import pytest

from tests.support.resume import max_abs_diff, resume_from, tiny_cfg, train

DEMO = 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py'


@pytest.fixture(autouse=True)
def _no_env_report(monkeypatch):
    monkeypatch.setattr('mmengine.runner.runner.collect_env', lambda: {})


def _dinov3_style(cfg):
    loader = cfg.train_dataloader
    pipeline = loader.dataset.pipeline
    pipeline[:] = [t for t in pipeline if t.type != 'BlockwiseMaskGenerator']
    multi_crop = next(t for t in pipeline if t.type == 'MultiCrop')
    multi_crop.gram_size = 48
    loader.collate_fn = dict(type='mmssl.block_mask_collate', patch_size=4)
    model = cfg.model
    k = model.loss.out_dim
    cfg.model = dict(
        type='DINOFamily',
        data_preprocessor=model.data_preprocessor,
        backbone=model.backbone,
        head=model.head,
        num_gram_crops=2,
        terms=dict(
            dino_cls=dict(
                type='DINOLoss', out_dim=k, centering='sinkhorn_knopp'
            ),
            ibot_patch=dict(
                type='iBOTPatchLoss', out_dim=k, centering='sinkhorn_knopp'
            ),
            koleo=dict(type='KoLeoLoss', weight=0.1),
            gram=dict(type='GramLoss', weight=1.0),
        ),
    )
    cfg.custom_hooks += [
        dict(type='GramTeacherHook', first_update=1, period=2),
        dict(type='LossWeightScheduleHook', key='gram', start=0.0, end=2.0),
        dict(
            type='LossWeightScheduleHook',
            key='dino_local',
            start=1.0,
            end=0.5,
            mode='cosine',
        ),
    ]
    return cfg


@pytest.mark.slow
def test_gram_run_resumes_exactly(demo_data_root, tmp_path):
    cfg = _dinov3_style(tiny_cfg(DEMO, demo_data_root, str(tmp_path / 'a')))
    straight, rec_a = train(cfg)
    (tmp_path / 'b').mkdir()
    resumed, rec_b = resume_from(
        cfg, str(tmp_path / 'a' / 'iter_3.pth'), str(tmp_path / 'b')
    )
    assert straight.iter == resumed.iter == 6
    assert int(straight.model.gram_teacher_updates) == 3  # before 1, 3, 5
    assert int(resumed.model.gram_teacher_updates) == 3
    assert straight.model.loss_weights['dino_local'] < 1.0
    assert [r['batch_idx'] for r in rec_b.rows] == [
        r['batch_idx'] for r in rec_a.rows[3:]
    ]
    diff = max_abs_diff(straight, resumed)
    assert diff <= 1e-6, diff
