"""tools/eval.py results say what they measured and never overwrite each
other; the headline names the data and the weights, once."""

import hashlib
import json
import os
import os.path as osp
import subprocess
import sys

import cv2
import numpy as np
import pytest
import torch

from mmssl.evaluation.records import (
    headline,
    read_metrics,
    run_record,
    short_sha256,
    write_result,
)
from tests.support.tools import ROOT, load_tool

DEMO = osp.join(ROOT, 'configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py')


def test_short_sha256_and_record(tmp_path):
    path = tmp_path / 'w.pth'
    path.write_bytes(b'weights')
    want = hashlib.sha256(b'weights').hexdigest()[:12]
    assert short_sha256(str(path)) == want
    command = ['tools/eval.py', 'c.py', '--data', 'my data']
    record = run_record('knn', 'c.py', str(path), 'd', {'bank': 3}, command)
    assert record['checkpoint_sha256'] == want
    assert record['command'] == "tools/eval.py c.py --data 'my data'"
    assert record['date'].endswith('Z') and record['threads'] >= 1
    random = run_record('knn', 'c.py', None, None)
    assert random['checkpoint'] == 'random init'
    assert random['checkpoint_sha256'] == ''
    line = headline('knn/top1', 94.987, dict(record, data='data/demo'))
    assert line == (
        f'knn/top1: 94.99  [data data/demo (3 bank); weights {path} '
        f'(sha256 {want})]'
    )


def test_write_result_never_overwrites(tmp_path):
    record = run_record('seg', 'c.py', None, 'd')
    picture = np.full((4, 4, 3), 7, np.uint8)
    first = write_result(str(tmp_path), 'seg', {'seg/mIoU': 1.0}, record,
                         picture, stamp='20260101_000000')  # fmt: skip
    second = write_result(str(tmp_path), 'seg', {'seg/mIoU': 2.0}, record,
                          None, stamp='20260101_000000')  # fmt: skip
    assert [osp.basename(p) for p in first] == [
        'eval_seg_20260101_000000.json', 'eval_seg_20260101_000000.png'
    ]  # fmt: skip
    assert [osp.basename(p) for p in second] == [
        'eval_seg_20260101_000000_1.json'
    ]
    assert read_metrics(first[0]) == {'seg/mIoU': 1.0}
    assert read_metrics(str(tmp_path / 'eval_seg.json')) == {'seg/mIoU': 2.0}
    with open(first[0]) as f:
        assert json.load(f)['run']['checkpoint'] == 'random init'
    assert cv2.imread(str(tmp_path / 'eval_seg.png'))[0, 0, 0] == 7


@pytest.fixture(scope='module')
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp('data')
    rng = np.random.default_rng(0)
    for split, n in (('train', 3), ('val', 2)):
        for cls, colour in (('a', (0, 0, 200)), ('b', (200, 0, 0))):
            folder = root / split / cls
            folder.mkdir(parents=True)
            for i in range(n):
                noise = rng.integers(0, 30, (32, 32, 3))
                cv2.imwrite(str(folder / f'{i}.png'), colour + noise)
    return str(root)


def _run(argv):
    return subprocess.run(
        [sys.executable, 'tools/eval.py', DEMO] + argv,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1'),
        timeout=300,
    )


def test_knn_cli_records_the_run_and_keeps_both(folders, tmp_path, capsys):
    """A random-init run after a trained one: two files, each saying what
    it measured; the headline once, naming data and weights."""
    from mmssl.config import load_config
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    torch.manual_seed(1)
    model = MODELS.build(load_config(DEMO).model)
    state = {
        f'teacher.backbone.{k}': v
        for k, v in model.backbone.state_dict().items()
    }
    ckpt = str(tmp_path / 'w.pth')
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), ckpt)
    work = str(tmp_path / 'work')
    common = ['--task', 'knn', '--data', folders, '--work-dir', work]
    trained = _run(common + ['--checkpoint', ckpt])
    assert trained.returncode == 0, trained.stderr[-2000:]
    load_tool('eval.py').main([DEMO] + common)  # in-process: no start-up
    random = capsys.readouterr()
    results = sorted(f for f in os.listdir(work) if f.startswith('eval_knn_'))
    assert len(results) == 2
    runs = [json.load(open(osp.join(work, f)))['run'] for f in results]
    assert [r['checkpoint'] for r in runs] == [ckpt, 'random init']
    assert runs[0]['checkpoint_sha256'] == short_sha256(ckpt) != ''
    assert runs[0]['counts'] == {'bank': 6, 'queries': 4}
    assert runs[0]['data'] == folders
    assert runs[1]['command'].startswith('tools/eval.py ')
    latest = json.load(open(osp.join(work, 'eval_knn.json')))
    assert latest['run']['checkpoint'] == 'random init'
    out = trained.stdout + trained.stderr
    heads = [x for x in out.splitlines() if x.startswith('knn/top1:')]
    assert len(heads) == 1, out[-3000:]
    assert heads[0] == trained.stdout.strip().splitlines()[-1]
    assert f'data {folders} (6 bank / 4 queries)' in heads[0]
    assert f'weights {ckpt} (sha256 {short_sha256(ckpt)})' in heads[0]
    assert 'weights random init' in random.out.strip().splitlines()[-1]
