"""mmssl.launch.torchrun: torchrun for dist_train.sh / dist_test.sh, with
a user error (exit 2) said in the worker's one line and nothing after."""

import os
import os.path as osp
import signal
import socket
import subprocess
import sys
import time

import pytest

from mmssl.launch.torchrun import exit_status

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _cmd(script) -> list:
    """torchrun through mmssl's launcher, one worker running ``script``."""
    return [
        sys.executable, '-m', 'mmssl.launch.torchrun', '--nnodes=1',
        '--nproc_per_node=1', '--master_addr=127.0.0.1',
        f'--master_port={_free_port()}', str(script),
    ]  # fmt: skip


ENV = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')


def _launch(tmp_path, body: str):
    script = tmp_path / 'worker.py'
    script.write_text(body)
    return subprocess.run(
        _cmd(script), capture_output=True, text=True, env=ENV, timeout=120,
        cwd=ROOT,
    )  # fmt: skip


def test_user_error_is_the_workers_one_line_and_status_2(tmp_path):
    proc = _launch(
        tmp_path,
        'import sys\n'
        "print('error: model.nek does not exist', file=sys.stderr)\n"
        'sys.exit(2)\n',
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == ['error: model.nek does not exist'], proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr


def test_other_failure_is_one_launcher_line_with_the_status(tmp_path):
    proc = _launch(tmp_path, 'import sys\nsys.exit(3)\n')
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert 'ChildFailedError' not in proc.stderr
    assert 'Traceback' not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith('error: ') and 'rank 0' in last
    assert 'exit status 3' in last


@pytest.mark.parametrize(
    'code,status', [(1, 1), (3, 3), (0, 1), (-9, 137), (-15, 143)]
)
def test_exit_status_of_a_worker_code(code, status):
    assert exit_status(code) == status


def test_signal_is_one_line_and_128_plus_its_number(tmp_path):
    script = tmp_path / 'worker.py'
    ready = tmp_path / 'ready'
    script.write_text(
        f'import pathlib, time\npathlib.Path({str(ready)!r}).touch()\n'
        'time.sleep(120)\n'
    )
    proc = subprocess.Popen(
        _cmd(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=ENV, cwd=ROOT,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready.exists(), 'the worker did not start'
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert 'Traceback' not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith('dist_train: stopped by SIGTERM')
    )
