"""Every demo config resumes exactly from a checkpoint inside an epoch.

For each ``configs/**/*_demo.py``: 4 images at batch 2 (2 iterations per
epoch), 3 epochs with the demo's own schedules, hooks, checkpoint hook and
runner, no workers, seed 0. The straight run saves ``iter_3.pth`` (after
the first batch of epoch 2) and goes on to iteration 6; a fresh runner
resumed from a copy of ``iter_3.pth`` in an empty work dir trains the
remaining 3 iterations (the rest of epoch 2, then epoch 3). Every parameter
and buffer must match to 1e-6, and so must the iteration count, the
learning rate and the batch indices of the resumed iterations.
"""

import os.path as osp

import pytest

from tests.support.resume import (
    DEMO_CONFIGS,
    max_abs_diff,
    resume_from,
    tiny_cfg,
    train,
)

TOL = 1e-6


@pytest.fixture(autouse=True)
def _no_env_report(monkeypatch):
    # mmengine's Runner runs compilers (gcc, nvcc) to log the environment
    monkeypatch.setattr('mmengine.runner.runner.collect_env', lambda: {})


@pytest.mark.slow
@pytest.mark.parametrize('path', DEMO_CONFIGS)
def test_resume_inside_epoch_is_exact(path, demo_data_root, request, tmp_path):
    volumes = None
    if '3d' in osp.basename(path):  # volumetric demos read data/volumes
        pytest.importorskip('monai')
        volumes = request.getfixturevalue('volume_data_root')
    multichannel = None
    if osp.join('configs', 'multichannel') in path:  # 5-channel TIFFs
        pytest.importorskip('tifffile')
        multichannel = request.getfixturevalue('multichannel_data_root')
    cfg = tiny_cfg(
        path,
        demo_data_root,
        str(tmp_path / 'straight'),
        volume_root=volumes,
        multichannel_root=multichannel,
    )
    if cfg is None:
        pytest.skip('evaluation-only config (no train_dataloader)')
    straight, rec_a = train(cfg)
    ckpt = tmp_path / 'straight' / 'iter_3.pth'
    (tmp_path / 'resumed').mkdir()
    resumed, rec_b = resume_from(cfg, str(ckpt), str(tmp_path / 'resumed'))

    assert straight.iter == resumed.iter == 6
    assert straight.epoch == resumed.epoch == 3
    # the resumed run did exactly the straight run's last 3 iterations
    keys = ('iter', 'epoch', 'batch_idx', 'lr')
    assert [{k: r[k] for k in keys} for r in rec_b.rows] == [
        {k: r[k] for k in keys} for r in rec_a.rows[3:]
    ]
    diff = max_abs_diff(straight, resumed)
    print(f'\nmax abs diff {path}: {diff:.3g}')
    assert diff <= TOL, diff
