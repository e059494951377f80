"""The CPU DINOv2 preset: what its header promises, and 4 GB of memory."""

import os
import os.path as osp
import re
import subprocess
import sys

import numpy as np
import pytest
from mmengine.config import Config

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PRESET = 'configs/dinov2/dinov2_vit-tiny-p14_1xb16-10e_custom-cpu.py'


def test_preset_is_the_documented_size():
    cfg = Config.fromfile(osp.join(ROOT, PRESET))
    assert cfg.model.backbone.arch == 'tiny'
    assert cfg.model.backbone.patch_size == 14
    loader = cfg.train_dataloader
    assert loader.batch_size == 16 and loader.num_workers <= 2
    crop = next(t for t in loader.dataset.pipeline if t.type == 'MultiCrop')
    assert (crop.global_size, crop.local_size) == (112, 56)
    assert (crop.num_global_crops, crop.num_local_crops) == (2, 4)
    assert cfg.train_cfg.max_epochs == 10
    with open(osp.join(ROOT, 'docs/en/custom_dataset.md')) as f:
        assert PRESET in f.read()


def test_preset_keeps_dinov2_and_its_short_run_changes():
    """DINOv2's terms and LayerScale stay, and so do the short-run
    changes of the config's header (runs: docs/dev/cpu_preset_history.md),
    which give informative Sinkhorn-Knopp targets at batch 16."""
    cfg = Config.fromfile(osp.join(ROOT, PRESET))
    model = cfg.model
    assert model.type == 'DINOv2'
    assert model.loss_weights == dict(dino=1.0, ibot=1.0, koleo=0.1)
    assert (
        model.loss.centering == model.ibot_loss.centering == ('sinkhorn_knopp')
    )
    assert model.backbone.layer_scale_init_value == 1e-5
    # Sinkhorn-Knopp spreads a prototype's mass over the global crops of
    # a batch: more prototypes than crops give near-uniform targets
    crop = next(
        t
        for t in cfg.train_dataloader.dataset.pipeline
        if t.type == 'MultiCrop'
    )
    crops = cfg.train_dataloader.batch_size * crop.num_global_crops
    assert model.head.n_prototypes == model.loss.out_dim == 32 <= crops
    assert model.ibot_loss.out_dim == 32
    assert model.head.use_bn
    assert crop.local_scale == (0.25, 0.6)
    hooks = {h.type: h for h in cfg.custom_hooks}
    temp = hooks['TeacherTempWarmupHook']
    assert temp.warmup_temp == temp.temp == 0.02
    assert hooks['TeacherEMAHook'].momentum == 0.99
    assert cfg.optim_wrapper.optimizer.lr == pytest.approx(1e-3)
    assert cfg.auto_scale_lr == dict(base_batch_size=16, rule='sqrt')


@pytest.mark.slow
def test_dry_run_of_the_preset_fits_in_4_gb(tmp_path):
    import cv2

    rng = np.random.default_rng(0)
    for i in range(20):  # mixed sizes, one grayscale
        shape = (96 + 16 * (i % 4), 128) + (() if i == 3 else (3,))
        img = rng.integers(0, 255, shape, dtype=np.uint8)
        cv2.imwrite(str(tmp_path / f'{i}.png'), img)
    proc = subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/train.py'),
            osp.join(ROOT, PRESET),
            '--dry-run',
            '--work-dir',
            str(tmp_path / 'wd'),
            '--cfg-options',
            f'train_dataloader.dataset.data_root={tmp_path}',
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    found = re.search(
        r'peak memory of one training step at batch 16: about ([\d.]+) GiB',
        proc.stdout,
    )
    assert found, proc.stdout
    assert 0.3 < float(found.group(1)) < 4.0
    assert 'warning' not in proc.stdout
    assert not (tmp_path / 'wd').exists()
