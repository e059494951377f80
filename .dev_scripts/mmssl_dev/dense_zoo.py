"""The dense-probe column of the model zoo: pretrain a dense demo, then
probe it frozen (segmentation) at random init and trained.

Each step is the user's own command (``tools/train.py``, ``tools/eval.py
--task seg``) run as a subprocess, so a row's figures come with the
commands that reproduce them and one crashing demo does not end the rest.
"""

import glob
import hashlib
import os
import os.path as osp
import re
import shlex
import subprocess
import sys
import time
from functools import partial
from typing import Callable, Dict, List, Optional

#: The dense set the dense demos read by default.
DEFAULT_DATA = 'data/dense'
#: Side of the probe's crop: the dense scenes are 64x64.
CROP = 64


def last_epoch_checkpoint(work_dir: str) -> str:
    """``work_dir/epoch_N.pth`` with the highest N."""
    found = glob.glob(osp.join(work_dir, 'epoch_*.pth'))
    if not found:
        raise FileNotFoundError(f'no epoch_*.pth in {work_dir}')
    return max(found, key=lambda p: int(re.findall(r'\d+', p)[-1]))


def data_fingerprint(data: str) -> str:
    """A short hash of the dense set's README, classes and file names, so
    a row says which version of the set it was measured on."""
    digest = hashlib.sha1()
    for name in ('README.md', 'classes.txt'):
        path = osp.join(data, name)
        if osp.isfile(path):
            with open(path, 'rb') as f:
                digest.update(f.read())
    for root, _, files in sorted(os.walk(data)):
        digest.update(
            '\n'.join(
                osp.relpath(osp.join(root, f), data) for f in sorted(files)
            ).encode()
        )
    return digest.hexdigest()[:12]


def commands(
    config: str,
    data: str,
    work_dir: str,
    train_options: Optional[List[str]] = None,
    probe_options: Optional[List[str]] = None,
) -> Dict[str, List[str]]:
    """The train and the two probe commands of one row (argv lists; the
    trained probe's ``--checkpoint`` is added once training is done)."""
    options = list(train_options or [])
    if osp.normpath(data) != DEFAULT_DATA:
        root = osp.join(data, 'images', 'training')
        options.append(f'train_dataloader.dataset.data_root={root}')
    train = [
        'tools/train.py',
        config,
        '--work-dir',
        osp.join(work_dir, 'train'),
    ]
    if options:
        train += ['--cfg-options'] + options
    probe = ['tools/eval.py', config, '--task', 'seg', '--data', data]
    probe += ['--crop', str(CROP)] + list(probe_options or [])
    return dict(
        train=train,
        probe_random=probe + ['--work-dir', osp.join(work_dir, 'random')],
        probe_trained=probe + ['--work-dir', osp.join(work_dir, 'trained')],
    )


def _timed(argv: List[str], log_file: str) -> float:
    """Run ``python argv`` with its output to ``log_file``; seconds taken.
    Raises ``RuntimeError`` with the log's tail when it fails."""
    os.makedirs(osp.dirname(log_file), exist_ok=True)
    start = time.perf_counter()
    with open(log_file, 'w') as log:
        code = subprocess.call(
            [sys.executable] + argv, stdout=log, stderr=subprocess.STDOUT
        )
    seconds = time.perf_counter() - start
    if code:
        with open(log_file) as log:
            tail = ''.join(log.readlines()[-5:])
        raise RuntimeError(f'{shlex.join(argv)} exited {code}:\n{tail}')
    return seconds


def _seg_metrics(work_dir: str) -> Dict[str, float]:
    from mmssl.evaluation.records import read_metrics

    metrics = read_metrics(osp.join(work_dir, 'eval_seg.json'))
    return {k: v for k, v in metrics.items() if '/IoU.' not in k} | {
        'per_class_iou': {
            k.split('/IoU.')[1]: v for k, v in metrics.items() if '/IoU.' in k
        }
    }


def measure(
    config: str,
    data: str,
    work_dir: str,
    train_options: Optional[List[str]] = None,
    probe_options: Optional[List[str]] = None,
    log: Callable[[str], None] = partial(print, flush=True),
) -> Dict:
    """Pretrain ``config``, probe it at random init and trained.

    Returns:
        dict: ``config``, ``algorithm`` (its folder), ``data`` and its
        ``data_fingerprint``, ``random`` and ``trained`` (seg metrics with
        per-class IoU), ``train_s``, ``probe_random_s``,
        ``probe_trained_s`` and ``commands`` (shell lines).
    """
    cmds = commands(config, data, work_dir, train_options, probe_options)
    row = dict(
        config=config,
        algorithm=osp.basename(osp.dirname(config)),
        data=data,
        data_fingerprint=data_fingerprint(data),
    )
    log(f'[{config}] probe at random init ...')
    row['probe_random_s'] = _timed(
        cmds['probe_random'], osp.join(work_dir, 'probe_random.log')
    )
    row['random'] = _seg_metrics(osp.join(work_dir, 'random'))
    log(f'[{config}] random init mIoU {row["random"]["seg/mIoU"]:.2f}')
    log(f'[{config}] pretraining ...')
    row['train_s'] = _timed(cmds['train'], osp.join(work_dir, 'train.log'))
    ckpt = last_epoch_checkpoint(osp.join(work_dir, 'train'))
    log(f'[{config}] trained in {row["train_s"]:.0f} s: {ckpt}; probing ...')
    cmds['probe_trained'] += ['--checkpoint', ckpt]
    row['probe_trained_s'] = _timed(
        cmds['probe_trained'], osp.join(work_dir, 'probe_trained.log')
    )
    row['trained'] = _seg_metrics(osp.join(work_dir, 'trained'))
    log(f'[{config}] trained mIoU {row["trained"]["seg/mIoU"]:.2f}')
    row['commands'] = {k: shlex.join(['python'] + v) for k, v in cmds.items()}
    return row


def markdown_row(row: Dict) -> str:
    """One table row: algorithm, config, mIoU trained vs random, times,
    commands."""
    line = ' <br> '.join(
        f'`{row["commands"][k]}`'
        for k in ('train', 'probe_random', 'probe_trained')
    )
    trained, random = row['trained']['seg/mIoU'], row['random']['seg/mIoU']
    return (
        f'| {row["algorithm"]} | `{osp.basename(row["config"])}` '
        f'| {trained:.2f} | {random:.2f} '
        f'| {row["train_s"]:.0f} | {row["probe_random_s"]:.0f} / '
        f'{row["probe_trained_s"]:.0f} | {line} |'
    )


TABLE_HEAD = (
    '| algorithm | dense demo | seg mIoU trained | seg mIoU random init '
    '| train (s) | probes random / trained (s) | commands |\n'
    '|---|---|---|---|---|---|---|'
)
