"""The helpers of tests/support/dist.py keep their promises: a failing or hung
rank fails the test clearly and leaves no process behind, a port clash of a
launcher is retried, a reserved port is refused to others but usable by
torch's TCPStore."""

import datetime
import os
import socket
import time

import pytest

from tests.support import dist as _dist


def _alive(pid: int) -> bool:
    """Not dead yet (own reading of /proc, independent of _dist's)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def _status(pid: int) -> str:
    try:
        with open(f'/proc/{pid}/status') as f:
            return f.read()[:400]
    except FileNotFoundError:
        return 'gone'


def _raises_on_rank_1(rank: int) -> None:
    if rank == 1:
        raise ValueError('broken on rank 1')


def _hangs(rank: int, out_dir: str) -> None:
    with open(os.path.join(out_dir, f'pid{rank}'), 'w') as f:
        f.write(str(os.getpid()))
    time.sleep(1000 if rank == 0 else 0)


def _env_and_threads(rank: int, out_dir: str) -> None:
    import torch

    with open(os.path.join(out_dir, f'rank{rank}'), 'w') as f:
        f.write(f'{os.environ["DIST_HELPER_PROBE"]} {torch.get_num_threads()}')


@pytest.mark.slow
def test_spawn_reports_the_failing_rank_and_runs_in_the_test_env(
    tmp_path, monkeypatch
):
    monkeypatch.setenv('DIST_HELPER_PROBE', 'seen')
    _dist.spawn(_env_and_threads, str(tmp_path))
    for rank in range(2):
        assert (tmp_path / f'rank{rank}').read_text() == 'seen 1'
    with pytest.raises(pytest.fail.Exception) as info:
        _dist.spawn(_raises_on_rank_1)
    assert 'rank 1 raised' in str(info.value)
    assert 'ValueError: broken on rank 1' in str(info.value)


@pytest.mark.slow
def test_spawn_kills_a_hung_rank_at_the_deadline(tmp_path):
    _dist.spawn(_raises_on_rank_1, nprocs=1)  # rank 0 only: starts at once
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as info:
        _dist.spawn(_hangs, str(tmp_path), timeout=5)
    assert time.monotonic() - start < 60
    assert 'ranks [0] still running at the deadline' in str(info.value)
    assert 'in _hangs' in str(info.value)  # its stack
    pid = int((tmp_path / 'pid0').read_text())
    assert not _alive(pid), _status(pid)


def test_run_kills_the_whole_tree_on_timeout(tmp_path):
    pids = tmp_path / 'pids'
    script = f'sleep 1000 & echo $! > {pids}; echo started; sleep 1000'
    with pytest.raises(pytest.fail.Exception) as info:
        _dist.run(['bash', '-c', script], timeout=6)  # bash starts in 6 s
    assert 'did not finish within 6 s' in str(info.value)
    assert 'started' in str(info.value)  # the output tail
    pid = int(pids.read_text())
    assert not _alive(pid), _status(pid)  # the grandchild too


def test_run_retrying_port_clash(tmp_path):
    flag = tmp_path / 'clashed'
    script = (
        f'if [ -e {flag} ]; then echo ok; exit 0; fi; touch {flag}; '
        'echo "bind: Address already in use" >&2; exit 1'
    )
    proc = _dist.run_retrying_port_clash(['bash', '-c', script], timeout=30)
    assert proc.returncode == 0 and proc.stdout == 'ok\n'
    # any other failure is returned at once, not retried
    proc = _dist.run_retrying_port_clash(
        ['bash', '-c', f'echo x >> {tmp_path}/n; exit 3'], timeout=30
    )
    assert proc.returncode == 3
    assert (tmp_path / 'n').read_text() == 'x\n'


def test_reserved_port_refused_to_others_usable_by_tcpstore():
    import torch.distributed as dist

    with _dist.reserved_port() as port:
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(('127.0.0.1', port))
        store = dist.TCPStore(
            '127.0.0.1',
            port,
            1,
            True,
            timeout=datetime.timedelta(seconds=30),
        )
        store.set('key', 'value')
        assert store.get('key') == b'value'
        del store


def test_file_init_method_is_in_the_test_folder(tmp_path):
    method = _dist.file_init_method(tmp_path)
    assert method == f'file://{tmp_path}/dist_store'
