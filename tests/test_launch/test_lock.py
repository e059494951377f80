"""The work-dir lock: refusal while alive, stale detection, release."""

import json
import os
import os.path as osp
import socket
import subprocess
import sys
import time

import pytest

from mmssl.launch.lock import (
    LOCK_NAME,
    RunLock,
    WorkDirBusyError,
    _process_start_time,
    stale_reason,
)


def _write(work_dir, **info):
    path = osp.join(work_dir, LOCK_NAME)
    with open(path, 'w') as f:
        json.dump(info, f)
    return path


@pytest.fixture
def live_pid():
    """A process that stays alive during the test."""
    proc = subprocess.Popen(
        [sys.executable, '-c', 'import time; time.sleep(60)']
    )
    yield proc.pid
    proc.kill()
    proc.wait(timeout=30)


@pytest.fixture
def dead_pid():
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait(timeout=30)
    return proc.pid


def test_acquire_writes_host_pid_and_release_removes(tmp_path):
    lock = RunLock(str(tmp_path / 'wd'), heartbeat=0.05)
    assert lock.acquire() is None
    info, _ = lock.read()
    assert info['host'] == socket.gethostname()
    assert info['pid'] == os.getpid()
    # the heartbeat thread refreshes the file's time
    os.utime(lock.path, (time.time() - 100, time.time() - 100))
    time.sleep(0.3)
    assert time.time() - os.stat(lock.path).st_mtime < 5
    lock.release()
    assert not osp.exists(lock.path)
    lock.release()  # idempotent


def test_live_run_refuses_and_names_work_dir(tmp_path, live_pid):
    path = _write(
        str(tmp_path),
        host=socket.gethostname(),
        pid=live_pid,
        pid_start=_process_start_time(live_pid),
        started='then',
    )
    before = open(path).read()
    lock = RunLock(str(tmp_path))
    for attempt in (lock.check, lock.acquire):
        with pytest.raises(WorkDirBusyError) as err:
            attempt()
        msg = str(err.value)
        assert f'pid {live_pid}' in msg and '--work-dir' in msg
        assert str(tmp_path) in msg
    assert open(path).read() == before  # untouched


def test_dead_pid_is_stale_and_replaced(tmp_path, dead_pid):
    _write(str(tmp_path), host=socket.gethostname(), pid=dead_pid)
    lock = RunLock(str(tmp_path))
    assert 'not running' in lock.check()
    note = lock.acquire()
    assert f'pid {dead_pid}' in note and 'not running' in note
    assert lock.read()[0]['pid'] == os.getpid()
    lock.release()
    assert not osp.exists(lock.path)


def test_reused_pid_is_stale(live_pid):
    info = dict(host=socket.gethostname(), pid=live_pid, pid_start='1')
    assert 'another process' in stale_reason(info, 0, 300)
    info['pid_start'] = _process_start_time(live_pid)
    assert stale_reason(info, 0, 300) is None


def test_other_host_judged_by_heartbeat_and_slurm_job():
    info = dict(host='elsewhere', pid=1, slurm_job_id='77')
    assert stale_reason(info, 10, 300, host='here', environ={}) is None
    assert 'heartbeat' in stale_reason(info, 301, 300, 'here', {})
    # a requeued job follows its own earlier run at once
    job = {'SLURM_JOB_ID': '77'}
    assert 'requeued' in stale_reason(info, 10, 300, 'here', job)
    assert stale_reason(info, 10, 300, 'here', {'SLURM_JOB_ID': '78'}) is None


def test_torn_lock_file_judged_by_age(tmp_path):
    path = osp.join(str(tmp_path), LOCK_NAME)
    with open(path, 'w') as f:
        f.write('{"host": "x", "pi')
    lock = RunLock(str(tmp_path), stale_after=300)
    with pytest.raises(WorkDirBusyError):
        lock.check()
    os.utime(path, (time.time() - 400, time.time() - 400))
    assert 'heartbeat' in lock.check()


def test_release_keeps_a_lock_taken_over_by_another_run(tmp_path):
    lock = RunLock(str(tmp_path), heartbeat=60)
    lock.acquire()
    _write(str(tmp_path), host='other', pid=1, token='theirs')
    lock.release()
    assert osp.exists(lock.path)
