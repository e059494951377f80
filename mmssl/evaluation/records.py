"""What an evaluation result is: its record, its files, its headline.

Every ``tools/eval.py`` run writes ``eval_<task>_<YYYYmmdd_HHMMSS>.json``
(never overwritten: a second run in the same second gets ``_1``) and a
copy under the stable name ``eval_<task>.json`` (the latest run); the
same for the picture. Besides the figures (flat keys, ``knn/top1``), the
JSON holds ``run``: the config, the checkpoint (or ``"random init"``)
with the first 12 hex digits of its SHA-256, the data root and its
counts, the UTC date, the command and the torch threads.
"""

import datetime
import hashlib
import json
import os
import os.path as osp
import shlex
import shutil
from typing import Dict, List, Optional

#: What the record says instead of a checkpoint path.
RANDOM_INIT = 'random init'


def short_sha256(path: str, digits: int = 12, chunk: int = 1 << 20) -> str:
    """The first ``digits`` hex digits of a file's SHA-256 ('' for a
    folder, e.g. a sharded checkpoint)."""
    if not osp.isfile(path):
        return ''
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(chunk), b''):
            digest.update(block)
    return digest.hexdigest()[:digits]


def run_record(
    task: str,
    config: str,
    checkpoint: Optional[str],
    data: Optional[str],
    counts: Optional[Dict[str, int]] = None,
    command: Optional[List[str]] = None,
) -> Dict:
    """The ``run`` entry of a result: what was measured, on what, how.

    Args:
        task (str): ``knn``, ``seg``, ...
        config (str): The config file.
        checkpoint (str, optional): The weights; None: the random init.
        data (str, optional): The data root (None: the config's data).
        counts (dict, optional): Image counts by role, e.g.
            ``{'train': 1438, 'val': 359}``.
        command (list, optional): The tool and its arguments.
    """
    import torch

    return dict(
        task=task,
        config=config,
        checkpoint=checkpoint or RANDOM_INIT,
        checkpoint_sha256=short_sha256(checkpoint) if checkpoint else '',
        data=data or "the config's data",
        counts=dict(counts or {}),
        date=datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%SZ'
        ),
        command=shlex.join(command) if command else '',
        threads=torch.get_num_threads(),
    )


def _free_stem(work_dir: str, task: str, stamp: str) -> str:
    stem, n = f'eval_{task}_{stamp}', 0
    while osp.exists(osp.join(work_dir, stem + '.json')):
        n += 1
        stem = f'eval_{task}_{stamp}_{n}'
    return stem


def write_result(
    work_dir: str,
    task: str,
    metrics: Dict,
    record: Dict,
    picture=None,
    stamp: Optional[str] = None,
) -> List[str]:
    """Write this run's JSON (and picture) under a new name, then copy
    them to the stable ``eval_<task>.json`` / ``.png``.

    Returns:
        list[str]: The paths of this run's own files.
    """
    import cv2

    os.makedirs(work_dir, exist_ok=True)
    stamp = stamp or datetime.datetime.now().strftime('%Y%m%d_%H%M%S')
    stem = _free_stem(work_dir, task, stamp)
    written = [osp.join(work_dir, stem + '.json')]
    with open(written[0], 'w') as f:
        json.dump(dict(metrics, run=record), f, indent=2)
    shutil.copyfile(written[0], osp.join(work_dir, f'eval_{task}.json'))
    if picture is not None:
        written.append(osp.join(work_dir, stem + '.png'))
        cv2.imwrite(written[1], picture)
        shutil.copyfile(written[1], osp.join(work_dir, f'eval_{task}.png'))
    return written


def describe_counts(counts: Dict[str, int]) -> str:
    """``{'train': 3, 'val': 2}`` -> ``'3 train / 2 val'``."""
    return ' / '.join(f'{n} {role}' for role, n in counts.items())


def headline(key: str, value: float, record: Dict) -> str:
    """The last line of a run: the figure, the data and the weights."""
    data = record['data']
    if record.get('counts'):
        data = f'{data} ({describe_counts(record["counts"])})'
    weights = record['checkpoint']
    if record.get('checkpoint_sha256'):
        weights = f'{weights} (sha256 {record["checkpoint_sha256"]})'
    return f'{key}: {value:.2f}  [data {data}; weights {weights}]'


def read_metrics(path: str) -> Dict[str, float]:
    """The figures of a result file, without its ``run`` record."""
    with open(path) as f:
        result = json.load(f)
    return {k: v for k, v in result.items() if k != 'run'}
