"""A tiny training process for the kill -9 test (test_crash_consistency).

Each iteration updates a small state with a recurrence (so a resume from a
wrong or mixed-up checkpoint changes the final value), then saves a
checkpoint with an 8 MB ballast tensor (so most of the time is spent
saving, and kills land inside saves) and keeps the newest two.

``atomic=True`` saves like mmssl's runner (temporary file, fsync,
rename, then ``last_checkpoint``). ``atomic=False`` is the fault
injection: ``last_checkpoint`` is written first and the checkpoint in
place, 1 MB at a time (a slow file system), as a writer without ordering
would leave it after a power cut, so a kill leaves a torn file that the
pointer names.

On start, :func:`mmssl.launch.find_newest_checkpoint` picks the
checkpoint; what it chose and every warning it gave are written to
``starts/<n>.json`` before training begins.
"""

import glob
import io
import json
import os
import os.path as osp
import time
import warnings

import torch

BALLAST = 2 * 1024 * 1024  # float32 values: 8 MB per checkpoint


def step(w: float, it: int) -> float:
    """The recurrence one iteration applies."""
    return 0.5 * w + it


def final_value(total: int) -> float:
    """The state after ``total`` iterations from scratch."""
    w = 0.0
    for it in range(total):
        w = step(w, it)
    return w


def _save(state: dict, work_dir: str, it: int, atomic: bool) -> None:
    from mmssl.checkpoint import atomic_write_text, save_checkpoint_atomic

    path = osp.join(work_dir, f'iter_{it}.pth')
    pointer = osp.join(work_dir, 'last_checkpoint')
    if atomic:
        save_checkpoint_atomic(state, path)
        atomic_write_text(path, pointer)
    else:  # pointer first, then the file in place, 1 MB at a time
        buffer = io.BytesIO()
        torch.save(state, buffer)
        data = buffer.getvalue()
        with open(pointer, 'w') as f:
            f.write(path)
        with open(path, 'wb') as f:
            for start in range(0, len(data), 1 << 20):
                f.write(data[start : start + (1 << 20)])
                f.flush()
                os.fsync(f.fileno())
                time.sleep(0.005)  # slow storage, whatever /tmp is
    for old in glob.glob(osp.join(work_dir, 'iter_*.pth')):
        n = int(osp.basename(old)[5:-4])
        if n <= it - 2:
            os.remove(old)


def run(work_dir: str, total: int, atomic: bool, start_id: int) -> None:
    """Resume from the newest complete checkpoint, train to ``total``."""
    from mmssl.launch import find_newest_checkpoint

    torch.set_num_threads(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        ckpt = find_newest_checkpoint(work_dir)
    record = dict(checkpoint=ckpt, warnings=[str(w.message) for w in caught])
    if ckpt is None:
        it, w, ballast = 0, 0.0, torch.zeros(BALLAST)
    else:
        state = torch.load(ckpt, weights_only=True)
        it, w, ballast = state['iter'], state['w'], state['ballast']
    record['start_iter'] = it
    starts = osp.join(work_dir, 'starts')
    os.makedirs(starts, exist_ok=True)
    with open(osp.join(starts, f'{start_id}.json'), 'w') as f:
        json.dump(record, f)
    while it < total:
        w = step(w, it)
        it += 1
        ballast[it % BALLAST] = it
        _save(dict(iter=it, w=w, ballast=ballast), work_dir, it, atomic)
    with open(osp.join(work_dir, 'done.json'), 'w') as f:
        json.dump(dict(iter=it, w=w), f)
