"""tools/analysis_tools/benchmark_train.py on the DINOv2 demo config."""

import glob
import json
import os.path as osp

import pytest
from mmengine.config import Config

from tests.support.tools import ROOT, load_tool

bench = load_tool('analysis_tools/benchmark_train.py')
DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_figures_and_log_line(demo_data_root, tmp_path, capsys):
    out = tmp_path / 'bench.json'
    bench.main(
        [
            DEMO,
            '--iters', '2', '--warmup', '1', '--amp', '--threads', '1',
            '--batch-size', '2', '--num-workers', '0', '--json', str(out),
            '--cfg-options',
            f'train_dataloader.dataset.data_root={demo_data_root}/train',
        ]
    )  # fmt: skip
    s = json.loads(out.read_text())
    assert s['iters'] == 2 and s['threads'] == 1 and s['amp'] is True
    # 2 images per iteration: images/s x s/iter is 2 up to the spread
    ratio = s['img_per_s'] * s['s_per_iter']
    spread = s['s_per_iter_max'] / s['s_per_iter_min']
    assert 2 / spread <= ratio * (1 + 1e-9) and ratio <= 2 * spread + 1e-9
    assert 0 <= s['data_share'] < 1
    assert s['peak_rss_mb'] > 100
    printed = capsys.readouterr().out
    assert 'images/s:' in printed and 'bfloat16' in printed
    (log,) = glob.glob(osp.join(s['work_dir'], '*', '*.log'))
    lines = [ln for ln in open(log) if 'Epoch(train)' in ln or 'Iter(' in ln]
    assert len(lines) == 3 and all('img_per_s:' in ln for ln in lines)
    assert all('data_share:' in ln and 'rss_mb:' in ln for ln in lines)


def test_compile_and_fsdp_switches(monkeypatch):
    cfg = Config(dict(model=dict(backbone=dict(type='DINOv3ViT'))))
    assert 'block' in bench.apply_compile(cfg, 'aot_eager')
    assert cfg.model.backbone.compile_blocks == dict(backend='aot_eager')
    cfg = Config(dict(model=dict(backbone=dict(type='ResNet'))))
    assert 'whole' in bench.apply_compile(cfg)
    assert cfg.compile is True
    monkeypatch.delenv('WORLD_SIZE', raising=False)
    with pytest.raises(SystemExit, match='torchrun'):
        bench.apply_fsdp(cfg, amp=True)


def test_default_threads_are_cores_per_process(monkeypatch):
    monkeypatch.setattr(
        bench.os, 'sched_getaffinity', lambda pid: set(range(4))
    )
    monkeypatch.setenv('LOCAL_WORLD_SIZE', '2')
    assert bench.default_threads() == 2
    monkeypatch.setenv('LOCAL_WORLD_SIZE', '8')
    assert bench.default_threads() == 1


def test_summary_once_per_run(tmp_path, capsys):
    """Under torchrun every process ran the tool; only rank 0 reports."""
    s = dict(
        iters=2, img_per_s=4.0, s_per_iter=0.5, s_per_iter_min=0.5,
        s_per_iter_max=0.5, data_share=0.1, peak_rss_mb=100.0,
    )  # fmt: skip
    out = tmp_path / 'r1.json'
    bench.report(s, ['note'], str(out), rank=1)
    assert capsys.readouterr().out == '' and not out.exists()
    bench.report(s, ['note'], str(out), rank=0)
    printed = capsys.readouterr().out
    assert printed.count('images/s: 4.00') == 1 and 'note' in printed
    assert json.loads(out.read_text())['iters'] == 2


def test_mfu_from_the_config_crops(capsys):
    from types import SimpleNamespace

    from mmssl.engine.flops import dino_step_flops
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    cfg = Config.fromfile(DEMO)
    s = dict(
        iters=2, img_per_s=1000.0, s_per_iter=0.5, s_per_iter_min=0.5,
        s_per_iter_max=0.5, data_share=0.1, peak_rss_mb=100.0,
    )  # fmt: skip
    args = SimpleNamespace(peak_tflops=0.5, amp=True)
    bench.add_mfu(s, cfg, args, cuda=False, gpus=2)
    flops = dino_step_flops(cfg).total
    assert s['mfu'] == pytest.approx(1000.0 * flops / 2 / 0.5e12)
    assert s['gflop_per_img'] == pytest.approx(flops / 1e9)
    bench.report(s, [], None, rank=0)
    assert f'MFU: {100 * s["mfu"]:.1f}% of 0.5 TFLOP/s x 2' in (
        capsys.readouterr().out
    )
    s2 = dict(s)
    bench.add_mfu(s2, cfg, SimpleNamespace(peak_tflops=None, amp=True),
                  cuda=False, gpus=1)  # fmt: skip
    assert s2['mfu'] is None
