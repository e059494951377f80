import os
import os.path as osp
import re
import subprocess
import sys

from tests.support.tools import ROOT, load_tool


def test_check_dataset_writes_bad_list(messy_root, tmp_path):
    check_dataset = load_tool('misc/check_dataset.py')

    root, files = messy_root
    out = str(tmp_path / 'bad.txt')
    rc = check_dataset.main([root, '--out', out, '--workers', '1'])
    assert rc == 1
    rows = [line.split('\t') for line in open(out).read().splitlines()]
    assert sorted(osp.basename(p) for p, _ in rows) == [
        'text.JPG',
        'truncated.jpg',
        'zero.jpg',
    ]
    reasons = dict((osp.basename(p), r) for p, r in rows)
    assert reasons['zero.jpg'] == 'zero-byte file'
    assert 'truncated' in reasons['truncated.jpg']


def test_browse_dataset_writes_pngs(messy_root, tmp_path):
    browse_dataset = load_tool('analysis_tools/browse_dataset.py')

    root, _ = messy_root
    out = tmp_path / 'browse'
    cfg = osp.join(ROOT, 'configs/_base_/datasets/custom_folder_multicrop.py')
    browse_dataset.main(
        [
            cfg,
            '--output-dir',
            str(out),
            '-n',
            '2',
            '--cfg-options',
            f'train_dataloader.dataset.data_root={root}',
            'train_dataloader.dataset.max_bad_ratio=1.0',
            'train_dataloader.dataset.pipeline.1.num_local_crops=2',
        ]
    )
    pngs = sorted(p.name for p in out.iterdir())
    assert pngs == ['sample_0000.png', 'sample_0001.png']
    assert (out / 'sample_0000.png').read_bytes()[:4] == b'\x89PNG'


def test_browse_dataset_names_each_bad_file_once(messy_root, tmp_path):
    """The dataset's log line and the tool's own line: one of them."""
    import subprocess

    root, _ = messy_root
    cfg = osp.join(ROOT, 'configs/_base_/datasets/custom_folder_multicrop.py')
    proc = subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/analysis_tools/browse_dataset.py'),
            cfg,
            '--output-dir',
            str(tmp_path / 'browse'),
            '-n',
            '50',
            '--cfg-options',
            f'train_dataloader.dataset.data_root={root}',
            'train_dataloader.dataset.max_bad_ratio=1.0',
            'train_dataloader.dataset.pipeline.0.max_side=64',
            'train_dataloader.dataset.pipeline.1.num_local_crops=0',
            'train_dataloader.dataset.pipeline.1.global_size=32',
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    bad = re.findall(
        r'(?:Skipping bad image file|skipped bad file) (\S+):', text
    )
    assert bad and len(bad) == len(set(bad)), bad


def test_overlay_mask_tints_masked_patches():
    import numpy as np

    overlay_mask = load_tool('analysis_tools/browse_dataset.py').overlay_mask

    img = np.zeros((4, 4, 3), np.uint8)
    mask = np.array([[True, False], [False, False]])
    out = overlay_mask(img, mask)
    assert (out[:2, :2, 0] > 100).all() and (out[2:, :, :] == 0).all()


@__import__('pytest').mark.slow
def test_benchmark_pipeline_runs(tmp_path):
    cfg = osp.join(ROOT, 'configs/_base_/datasets/custom_folder_multicrop.py')
    res = subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/analysis_tools/benchmark_pipeline.py'),
            cfg,
            '--make-synthetic',
            str(tmp_path / 'syn'),
            '--num-images',
            '3',
            '--workers',
            '0',
            '--cfg-options',
            'train_dataloader.dataset.pipeline.1.num_local_crops=2',
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(__import__('os').environ, PYTHONPATH=ROOT),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert 'torchvision img/s' in res.stdout
    row = res.stdout.strip().splitlines()[-1].split()
    assert row[0] == '0' and float(row[1]) > 0 and float(row[2]) > 0
