"""Signals, the work-dir lock and safety checkpoints, in real processes.

Each test runs tools/train.py on a tiny iteration-based SimCLR (30
iterations, a short sleep each) and signals it while it trains.
"""

import glob
import json
import os
import os.path as osp
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from mmssl.checkpoint import load_checkpoint
from mmssl.launch import LOCK_NAME
from tests.support.dist import reserved_port
from tests.support.procs import Proc, run, train_cmd

pytestmark = pytest.mark.slow

STOPPED = re.compile(
    r'^mmssl: stopped at iter (\d+) on (SIG\w+); saved (\S+); '
    r'continue with --resume$',
    re.M,
)


@pytest.fixture
def dead_pid():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait(timeout=30)
    return proc.pid


def _stop_line(output: str):
    found = STOPPED.findall(output)
    assert len(found) == 1, output[-3000:]
    iters, name, path = found[0]
    return int(iters), name, path


def _iters_run(output: str) -> int:
    return len(re.findall(r'Iter\(train\) \[\s*\d+/30\]', output))


def test_sigterm_saves_stops_and_resume_finishes(
    demo_data_root, tmp_path, dead_pid
):
    """SIGTERM mid-run; then --resume, over a stale lock, with safety
    checkpoints every 0.12 s."""
    wd = str(tmp_path / 'wd')
    proc = Proc(train_cmd(wd, demo_data_root))
    proc.wait_for('Iter(train) [ 5/30]')
    proc.signal(signal.SIGTERM)
    assert proc.finish() == 143, proc.output[-3000:]
    stopped, name, path = _stop_line(proc.output)
    assert name == 'SIGTERM' and 5 <= stopped < 30
    assert path == osp.join(wd, f'iter_{stopped}.pth')
    assert open(osp.join(wd, 'last_checkpoint')).read() == path
    ckpt = load_checkpoint(path)  # weights-only, mmssl's allowlist
    assert ckpt['meta']['iter'] == stopped
    assert 'optimizer' in ckpt and 'state_dict' in ckpt
    lock = osp.join(wd, LOCK_NAME)
    assert not osp.exists(lock)  # released after the save
    assert 'Traceback' not in proc.output

    # a run killed hard left its lock behind: dead pid, this host
    with open(lock, 'w') as f:
        json.dump(dict(host=socket.gethostname(), pid=dead_pid), f)
    resumed = run(
        train_cmd(
            wd, demo_data_root, '--resume', '--checkpoint-every-minutes=0.002'
        )
    )
    assert resumed.popen.returncode == 0, resumed.output[-3000:]
    assert f'resuming from {path}' in resumed.output
    assert _iters_run(resumed.output) == 30 - stopped
    assert load_checkpoint(osp.join(wd, 'iter_30.pth'))['meta']['iter'] == 30
    assert f'replaced the stale lock {lock}' in resumed.output
    assert f'pid {dead_pid} is not running' in resumed.output
    saves = re.findall(r'safety checkpoint saved to (\S+)', resumed.output)
    assert len(saves) >= 2, resumed.output[-3000:]
    assert load_checkpoint(saves[-1])['meta']['iter'] > stopped
    # only the newest safety checkpoint is kept (and the others)
    kept = sorted(os.listdir(wd))
    assert [f for f in kept if f.endswith('.pth')] == sorted(
        {osp.basename(saves[-1]), osp.basename(path), 'iter_30.pth'}
    )
    assert LOCK_NAME not in kept


def test_all_ranks_stop_together_when_one_is_signalled(
    demo_data_root, tmp_path
):
    """Two gloo processes; only rank 1 gets Ctrl-C; both save-and-stop."""
    wd = str(tmp_path / 'wd')
    procs = []
    # the port stays reserved until rank 0's store listens on it
    with reserved_port() as port:
        try:
            for rank in (0, 1):
                env = dict(
                    RANK=str(rank),
                    LOCAL_RANK=str(rank),
                    WORLD_SIZE='2',
                    MASTER_ADDR='127.0.0.1',
                    MASTER_PORT=str(port),
                    CUDA_VISIBLE_DEVICES='',
                )
                cmd = train_cmd(wd, demo_data_root, '--launcher', 'pytorch')
                procs.append(Proc(cmd, env=env))
            procs[0].wait_for('Iter(train) [ 5/30]')
            procs[1].signal(signal.SIGINT)
            codes = [p.finish() for p in procs]
        finally:
            for p in procs:
                p.kill()
    assert codes == [130, 130], procs[0].output[-3000:]
    # rank 0 never got a signal: it stopped because rank 1 did
    assert 'SIGINT received' in procs[1].output
    assert 'received' not in procs[0].output
    stopped, name, path = _stop_line(procs[0].output)
    assert name == 'SIGINT' and 5 <= stopped < 30
    assert 'stopped at' not in procs[1].output  # one line, from rank 0
    assert load_checkpoint(path)['meta']['iter'] == stopped


def test_second_run_refused_and_second_ctrl_c_aborts(demo_data_root, tmp_path):
    wd = str(tmp_path / 'wd')
    lock = osp.join(wd, LOCK_NAME)
    first = Proc(
        train_cmd(
            wd,
            demo_data_root,
            'train_cfg.max_iters=300',
            "custom_hooks=[dict(type='SlowIterHook',seconds=5.0)]",
        )
    )
    try:
        first.wait_for('Iter(train) [  1/300]')
        assert osp.isfile(lock)
        # a second run on the same work dir refuses while the first lives
        second = run(train_cmd(wd, demo_data_root))
        assert second.popen.returncode == 1, second.output[-3000:]
        assert 'is in use by a run that is still alive' in second.output
        assert f'pid {first.popen.pid}' in second.output
        assert '--work-dir' in second.output
        assert 'Iter(train)' not in second.output

        # Ctrl-C twice, 1.2 s apart, early in a 5 s iteration: the first
        # asks for a save at its end, the second aborts before that
        first.drain()
        first.wait_for('Iter(train) [')
        time.sleep(0.5)  # that iteration's hooks are done: the next sleeps
        first.signal(signal.SIGINT)
        first.wait_for('SIGINT received')
        time.sleep(1.2)
        first.signal(signal.SIGINT)
        assert first.finish() == 130
    finally:
        first.kill()
    assert 'mmssl: aborted by a second Ctrl-C' in first.output
    assert 'stopped at' not in first.output
    assert 'Traceback' not in first.output
    assert not glob.glob(osp.join(wd, 'iter_*.pth'))
    assert not osp.isfile(lock)  # released on the way out
