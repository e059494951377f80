"""kill -9 at random moments while every iteration saves a checkpoint.

After each kill the next start must pick the newest checkpoint that is
complete (checked here independently: the highest iteration whose file
``torch.load`` reads), never a torn or partial one, and must name every
torn candidate in a warning. 17 kills hit a fast forked training process
(``crash_train.py``, 8 MB checkpoints, so most kills land inside saves;
every other one writes without ordering to leave torn files), 3 hit
``tools/train.py``. Kill moments come from a seeded generator.
"""

import glob
import json
import multiprocessing
import os
import os.path as osp
import random
import re
import signal
import subprocess
import sys
import time

import crash_train
import pytest
import torch

ROOT = osp.dirname(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
)
SEED = 20261123


def _iteration(path: str) -> int:
    return int(re.search(r'(\d+)\.pth$', path).group(1))


def _loads(path: str) -> bool:
    try:
        torch.load(path, map_location='cpu', weights_only=False)
    except Exception:
        return False
    return True


def newest_complete(work_dir: str):
    """(highest-iteration checkpoint that loads, the ones that do not)."""
    files = glob.glob(osp.join(work_dir, '*_*.pth'))
    complete = [p for p in files if _loads(p)]
    torn = sorted(set(files) - set(complete))
    newest = max(complete, key=_iteration) if complete else None
    return newest, torn


def _wait_for(predicate, timeout: float, what: str, proc=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f'process ended before {what}')
        time.sleep(0.02)
    raise AssertionError(f'timed out waiting for {what}')


def _read_json(path: str):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class _Forked:
    """``multiprocessing`` child with the ``poll`` of a Popen."""

    def __init__(self, proc):
        self.proc = proc
        self.pid = proc.pid

    def poll(self):
        return self.proc.exitcode


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_kill9_in_saves_resumes_from_newest_complete(tmp_path):
    rng = random.Random(SEED)
    ctx = multiprocessing.get_context('fork')
    wd = str(tmp_path)
    landed_in_save = 0
    for k in range(17):
        atomic = k % 2 == 0
        expected, torn = newest_complete(wd)
        tmp_before = set(glob.glob(osp.join(wd, '.*.tmp')))
        proc = ctx.Process(target=crash_train.run, args=(wd, 10**6, atomic, k))
        proc.start()
        try:
            record = _wait_for(
                lambda: _read_json(osp.join(wd, 'starts', f'{k}.json')),
                60,
                f'start {k}',
                _Forked(proc),
            )
            time.sleep(rng.uniform(0.3, 1.2))
        finally:  # also on a failure: a live child would hang pytest's exit
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(30)
        assert proc.exitcode == -signal.SIGKILL

        # the start chose the newest complete checkpoint ...
        assert record['checkpoint'] == expected, (k, record, torn)
        # ... and named every torn one it passed over
        for path in torn:
            if _iteration(path) > _iteration(expected or 'x_0.pth'):
                assert any(path in w for w in record['warnings']), (k, path)
        after_torn = newest_complete(wd)[1]
        new_tmp = set(glob.glob(osp.join(wd, '.*.tmp'))) - tmp_before
        if after_torn if not atomic else new_tmp:
            landed_in_save += 1
        if atomic:  # mmssl's atomic save never leaves a torn .pth
            assert after_torn == [] or set(after_torn) <= set(torn)

    print(f'\n{landed_in_save} of 17 kills left a torn or temporary file')
    assert landed_in_save >= 6, landed_in_save
    # the last start finishes the run with the state of an unbroken one
    total = newest_complete(wd)[0]
    total = _iteration(total) + 3 if total else 3
    crash_train.run(wd, total, True, 17)
    done = _read_json(osp.join(wd, 'done.json'))
    assert done == dict(iter=total, w=crash_train.final_value(total))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill9_tools_train_resumes_from_newest_complete(
    demo_data_root, tmp_path
):
    """3 kills of ``tools/train.py --resume`` saving every iteration."""
    rng = random.Random(SEED + 1)
    wd = str(tmp_path / 'work')
    cmd = [
        sys.executable,
        osp.join(ROOT, 'tools', 'train.py'),
        osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'),
        '--work-dir',
        wd,
        '--resume',
        '--cfg-options',
        f'train_dataloader.dataset.data_root={demo_data_root}/train',
        'train_dataloader.dataset.indices=12',
        'train_dataloader.batch_size=2',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'train_cfg.max_epochs=2',
        'val_cfg=None',
        'val_dataloader=None',
        'val_evaluator=None',
        'default_hooks.logger.interval=1',
        'default_hooks.checkpoint.by_epoch=False',
        'default_hooks.checkpoint.interval=1',
        'default_hooks.checkpoint.max_keep_ckpts=2',
    ]
    env = dict(os.environ, OMP_NUM_THREADS='1')
    for k in range(4):
        expected, torn = newest_complete(wd) if k else (None, [])
        log = tmp_path / f'run{k}.log'
        with open(log, 'w') as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=env
            )
            try:
                if k < 3:
                    _wait_for(
                        lambda: (
                            log.read_text().count('Saving checkpoint') >= 1
                        ),
                        240,
                        f'a checkpoint of run {k}',
                        proc,
                    )
                    # a random moment, but no later than the save of
                    # iteration 3 (k + 1): on a fast machine 1.5 s can be
                    # the rest of the run, and the next start then finds
                    # nothing left to do (no checkpoint, no resume to check)
                    delay, start = rng.uniform(0.0, 1.5), time.monotonic()
                    cap = f'Saving checkpoint at {3 * (k + 1)} iterations'
                    _wait_for(
                        lambda: (
                            time.monotonic() - start >= delay
                            or cap in log.read_text()
                        ),
                        240,
                        f'the kill moment of run {k}',
                        proc,
                    )
                    proc.kill()
                rc = proc.wait(timeout=240)
            finally:
                if proc.poll() is None:
                    proc.kill()
        text = log.read_text()
        if k and expected is not None:
            assert f'resuming from {expected}' in text, (k, expected)
        else:
            # run 0, or a kill before the first save was complete (a busy
            # machine): nothing to resume, and the run says so
            assert 'starts from scratch' in text, (k, text[-2000:])
        if k < 3:
            assert rc == -signal.SIGKILL
    assert rc == 0, text[-3000:]
    assert 'Saving checkpoint at 12 iterations' in text
    assert _iteration(newest_complete(wd)[0]) == 12


def _ckpt(path: str, mtime: float) -> str:
    torch.save({'meta': {}, 'w': torch.arange(1000.0)}, path)
    os.utime(path, (mtime, mtime))
    return path


def test_checkpoint_problem_names_what_is_wrong(tmp_path):
    from mmssl.launch import checkpoint_problem

    good = _ckpt(str(tmp_path / 'good.pth'), time.time())
    data = open(good, 'rb').read()
    assert checkpoint_problem(good) is None
    (tmp_path / 'cut.pth').write_bytes(data[: len(data) // 2])
    assert 'torn or partial' in checkpoint_problem(str(tmp_path / 'cut.pth'))
    # same length, a block of tensor bytes garbled (a lost write)
    at = data.index(b'\x00\x00\x80\x3f')  # 1.0 in the tensor
    garbled = data[:at] + b'\xff' * 64 + data[at + 64 :]
    (tmp_path / 'garbled.pth').write_bytes(garbled)
    assert 'CRC' in checkpoint_problem(str(tmp_path / 'garbled.pth'))
    assert checkpoint_problem(str(tmp_path / 'garbled.pth'), False) is None
    (tmp_path / 'text.pth').write_text('not a checkpoint')
    assert 'zip' in checkpoint_problem(str(tmp_path / 'text.pth'))
    import zipfile

    with zipfile.ZipFile(tmp_path / 'other.pth', 'w') as z:
        z.writestr('a/b.txt', 'x')
    assert 'data.pkl' in checkpoint_problem(str(tmp_path / 'other.pth'))


def test_finder_skips_torn_files_with_a_warning(tmp_path):
    from mmssl.launch import (
        IncompleteCheckpointWarning,
        find_newest_checkpoint,
        resolve_resume,
    )

    now = time.time()
    wd = str(tmp_path)
    _ckpt(osp.join(wd, 'iter_1.pth'), now - 3)
    good = _ckpt(osp.join(wd, 'iter_2.pth'), now - 2)
    data = open(good, 'rb').read()
    torn = osp.join(wd, 'iter_3.pth')
    with open(torn, 'wb') as f:
        f.write(data[:100])
    os.utime(torn, (now, now))
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(torn)  # the pointer names the torn file
    with pytest.warns(IncompleteCheckpointWarning, match='iter_3.pth'):
        assert find_newest_checkpoint(wd) == good
    with pytest.warns(IncompleteCheckpointWarning):
        assert resolve_resume('auto', wd)[:2] == (True, good)
