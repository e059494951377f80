"""Helpers for tests that start processes: every wait is bounded, a hang
fails the test with a clear message and kills the whole process tree, and
no rendezvous depends on a port that someone else may take first.

- :func:`spawn` runs ``fn(rank, *args)`` in ``nprocs`` processes forked
  from a forkserver that imported torch and mmssl once, so a rank starts in
  a fraction of a second instead of re-importing torch (``spawn``) and
  without inheriting the test process's threads and locks (``fork``).
- :func:`init_gloo` joins the ranks through a file in the test's
  ``tmp_path`` (``file://``, no TCP port at all), with a gloo timeout so a
  missing peer raises instead of waiting 30 minutes.
- :func:`run` is ``subprocess.run`` that kills the child and all its
  descendants on a timeout or when the test itself is interrupted (by
  pytest-timeout, Ctrl-C, ...).
- :func:`reserved_port` holds a TCP port for a child process that must be
  told a port; :func:`run_retrying_port_clash` reruns a launcher that
  picks its own port when another program took it first.
"""

import contextlib
import datetime
import faulthandler
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Callable, Iterator, Sequence

import pytest

#: Bound of one multi-process test part (spawned ranks, one subprocess).
#: Below the suite's pytest-timeout so this message, not the generic one,
#: reports a hang.
PROC_TIMEOUT = 300
#: How long a gloo rank waits for its peers in a rendezvous or collective.
GLOO_TIMEOUT = 180
#: Modules the forkserver imports once, for every rank it forks.
PRELOAD = [
    'torch',
    'torch.distributed',
    'mmengine.runner',
    'mmssl.datasets',
    'mmssl.engine',
    'mmssl.models',
]
_PORT_CLASH = ('address already in use', 'eaddrinuse', 'errno: 98')


def file_init_method(tmp_path) -> str:
    """``file://`` rendezvous in ``tmp_path``: unique to the test, no
    port. The file must not exist before the ranks start."""
    path = os.path.join(str(tmp_path), 'dist_store')
    assert not os.path.exists(path), f'stale rendezvous file {path}'
    return 'file://' + path


def init_gloo(rank: int, world_size: int, init_method: str) -> None:
    """Join a CPU (gloo) process group; call first in a rank."""
    import torch.distributed as dist

    dist.init_process_group(
        'gloo',
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=GLOO_TIMEOUT),
    )


def _run_rank(rank: int, target: tuple, setup: dict, args: tuple) -> None:
    """Rank entry point: take the test's environment, import its worker by
    name and run it. Output goes to ``rank<r>.log`` in ``setup['logs']``;
    SIGUSR1 dumps every thread's stack there; an exception is left in
    ``rank<r>.err`` for :func:`spawn`."""
    log = os.path.join(setup['logs'], f'rank{rank}')
    with open(log + '.log', 'w') as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        import torch

        os.environ.clear()  # the test's environment, as with 'spawn'
        os.environ.update(setup['env'])
        os.chdir(setup['cwd'])
        for entry in reversed(setup['path']):  # the test modules' folders
            if entry not in sys.path:
                sys.path.insert(0, entry)
        torch.set_num_threads(1)  # the ranks share the machine's cores
        # a forkserver child defaults to forkserver for its own children:
        # DataLoader workers would re-import everything, slowly. Fork them,
        # as in a rank started by torchrun.
        multiprocessing.set_start_method('fork', force=True)
        module, name = target
        fn = getattr(importlib.import_module(module), name)
        fn(rank, *args)
        if torch.distributed.is_initialized():  # a clean exit for gloo
            torch.distributed.destroy_process_group()
    except Exception:
        with open(log + '.err', 'w') as f:
            f.write(traceback.format_exc())
        sys.exit(1)


def _tail(path: str, size: int = 3000) -> str:
    with contextlib.suppress(OSError), open(path, errors='replace') as f:
        return f.read()[-size:]
    return ''


def _report(procs: list, logs: str, logs_too: bool) -> str:
    parts = []
    for rank, proc in enumerate(procs):
        base = os.path.join(logs, f'rank{rank}')
        if logs_too:
            out = _tail(base + '.log')
            parts.append(f'-- rank {rank} output (tail):\n{out}')
        if os.path.exists(base + '.err'):
            parts.append(f'-- rank {rank} raised:\n{_tail(base + ".err")}')
        elif proc.exitcode not in (None, 0):
            parts.append(f'-- rank {rank}: exit code {proc.exitcode}')
    return '\n'.join(parts)


def _wait(procs: list, deadline: float, logs: str, what: str) -> None:
    """Return when all ``procs`` exited with 0; fail the test as soon as
    one exits otherwise, or when ``deadline`` passes."""
    while True:
        if any(p.exitcode not in (None, 0) for p in procs):
            time.sleep(1)  # let a peer's error land, to report it too
            report = _report(procs, logs, logs_too=False)
            pytest.fail(f'{what} failed:\n{report}', pytrace=False)
        pending = [p for p in procs if p.exitcode is None]
        if not pending:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            for proc in pending:  # where is it stuck?
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(2)
            alive = [r for r, p in enumerate(procs) if p.exitcode is None]
            pytest.fail(
                f'{what}: ranks {alive} still running at the deadline (a '
                'hang, e.g. a collective waiting for a rank that never '
                'joins); killed them. Their stacks and output:\n'
                + _report(procs, logs, logs_too=True),
                pytrace=False,
            )
        multiprocessing.connection.wait([p.sentinel for p in pending], left)


def spawn(
    fn: Callable, *args, nprocs: int = 2, timeout: float = PROC_TIMEOUT
) -> None:
    """Run ``fn(rank, *args)`` in ``nprocs`` fresh processes and wait.

    ``fn`` must be a module-level function of an importable module (a test
    module is); the ranks see the test's environment variables, working
    folder and ``sys.path``. A rank that raises fails the test with its
    traceback; ranks still running after ``timeout`` seconds fail it with
    their stacks. Whatever happens, also when the test is interrupted, no
    rank nor any of its DataLoader workers is left behind.

    Args:
        fn (Callable): Worker, called as ``fn(rank, *args)``.
        *args: Picklable arguments after the rank.
        nprocs (int): Number of ranks. Defaults to 2.
        timeout (float): Seconds for all ranks together.
    """
    ctx = multiprocessing.get_context('forkserver')
    ctx.set_forkserver_preload(PRELOAD)  # no effect once it is running
    deadline = time.monotonic() + timeout
    target = (fn.__module__, fn.__qualname__)
    procs = []
    with tempfile.TemporaryDirectory() as logs:
        setup = dict(
            env=dict(os.environ), cwd=os.getcwd(), path=sys.path, logs=logs
        )
        try:
            for rank in range(nprocs):
                proc = ctx.Process(
                    target=_run_rank, args=(rank, target, setup, args)
                )
                procs.append(proc)
                proc.start()
            _wait(procs, deadline, logs, f'{fn.__qualname__} x{nprocs}')
        finally:
            for proc in procs:
                # started and not reaped yet: its pid is still its own
                if proc.pid is not None and proc.exitcode is None:
                    kill_tree(proc.pid)
                    proc.join(5)


def _children() -> dict:
    """Map of parent pid to its child pids, read from /proc."""
    tree: dict = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                stat = f.read()
        except OSError:  # exited meanwhile
            continue
        ppid = int(stat.rsplit(')', 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _tree(pid: int) -> list:
    tree, todo, found = _children(), [pid], []
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(tree.get(p, []))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and all its descendants; wait (10 s at most) until
    they are dead.

    Everything is stopped first (a stopped process cannot fork), until no
    new descendant appears, then killed, so nothing escapes by being
    re-parented while its parent dies.
    """
    stopped: set = set()
    for _ in range(20):
        new = [p for p in _tree(pid) if p not in stopped]
        if not new:
            break
        for p in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGSTOP)
            stopped.add(p)
    for p in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    # a killed process still runs its exit (closing files and sockets), for
    # a while on a loaded machine: wait until it is gone or a zombie
    deadline = time.monotonic() + 10
    while any(_running(p) for p in stopped) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def run(
    cmd: Sequence[str], timeout: float = PROC_TIMEOUT, **kwargs
) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)``, bounded.

    On a timeout the command and all its descendants (e.g. torchrun's
    workers, which run in sessions of their own) are killed and the test
    fails with the tail of the output. If the test is interrupted while
    waiting, the process tree is killed too.
    """
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        pytest.fail(
            f'{" ".join(map(str, cmd))[:300]}\ndid not finish within '
            f'{timeout:.0f} s; killed it and its children. Output tail:\n'
            f'{(out + err)[-3000:]}',
            pytrace=False,
        )
    finally:
        if proc.poll() is None:  # interrupted while waiting
            kill_tree(proc.pid)
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def run_retrying_port_clash(
    cmd: Sequence[str],
    attempts: int = 3,
    timeout: float = PROC_TIMEOUT,
    **kwargs,
) -> subprocess.CompletedProcess:
    """:func:`run` a launcher that picks a free port itself, again when it
    failed because another program bound that port between the pick and
    the bind (the race every pick-then-bind launcher has); ``timeout``
    covers all attempts."""
    deadline = time.monotonic() + timeout
    for _ in range(attempts):
        left = max(deadline - time.monotonic(), 1)
        proc = run(cmd, timeout=left, **kwargs)
        log = (proc.stdout + proc.stderr).lower()
        if proc.returncode == 0 or not any(s in log for s in _PORT_CLASH):
            break
    return proc


@contextlib.contextmanager
def reserved_port() -> Iterator[int]:
    """A TCP port nobody else is handed out while the context is open.

    The port stays bound (``SO_REUSEADDR``, not listening): the kernel gives
    it to no other ``bind(0)`` nor outgoing connection, while a server that
    also sets ``SO_REUSEADDR`` (torch's TCPStore does) can still listen on
    it. Unlike bind-then-close, nothing can take it in between.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(('', 0))
        yield sock.getsockname()[1]
