"""One work dir, one run: a lock file with host, pid and a heartbeat.

Two runs writing into one work dir overwrite each other's checkpoints and
``last_checkpoint``. Rank 0 of a training run holds
``<work_dir>/mmssl-run.lock`` while it trains; a second run finds it and
refuses to start, naming the first run and ``--work-dir``. A lock whose
run is gone is *stale* and is replaced, with a message saying why:

* same host, and its pid is not running (or is a newer process that
  reuses the number: the start time differs),
* the same SLURM job id (a requeued job follows its own earlier run),
* or no heartbeat for ``stale_after`` seconds (another host, so the pid
  cannot be checked; the holder refreshes the file's time every
  ``heartbeat`` seconds from a background thread).

The lock is removed when training ends, normally, by an error, or after a
save on a signal. Standard library only.
"""

import json
import os
import os.path as osp
import socket
import threading
import time
import uuid
from typing import Mapping, Optional, Tuple

LOCK_NAME = 'mmssl-run.lock'


class WorkDirBusyError(RuntimeError):
    """Another live run holds the work dir."""


def _process_start_time(pid: int) -> Optional[str]:
    """Start time of ``pid`` in clock ticks since boot (Linux), or None."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces; fields after ')' are fixed
    return stat.rsplit(')', 1)[-1].split()[19]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def stale_reason(
    info: Mapping,
    age: float,
    stale_after: float,
    host: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Optional[str]:
    """Why the run that wrote ``info`` is gone, or None if it may be alive.

    Args:
        info (Mapping): The lock file's content.
        age (float): Seconds since its last heartbeat.
        stale_after (float): Heartbeat age that counts as dead.
        host (str, optional): This host. Defaults to the host name.
        environ (Mapping, optional): Defaults to ``os.environ``.

    Returns:
        str | None: A reason for the message, None for a live run.
    """
    host = host or socket.gethostname()
    environ = os.environ if environ is None else environ
    pid = int(info.get('pid', -1))
    job = environ.get('SLURM_JOB_ID')
    if job and info.get('slurm_job_id') == job:
        return f'an earlier run of SLURM job {job} (requeued)'
    if info.get('host') == host:
        if pid <= 0 or not _pid_alive(pid):
            return f'pid {pid} is not running on {host}'
        started = info.get('pid_start')
        if started and _process_start_time(pid) not in (None, started):
            return f'pid {pid} on {host} is now another process'
        return None
    if age > stale_after:
        return f'no heartbeat for {age:.0f} s (> {stale_after:.0f} s)'
    return None


class RunLock:
    """The lock of one training run on ``work_dir``.

    Args:
        work_dir (str): The run's work dir (created if missing).
        heartbeat (float): Seconds between refreshes of the lock file's
            time. Defaults to 30.
        stale_after (float): A lock from another host with an older
            heartbeat is stale. Defaults to 300.
    """

    def __init__(
        self, work_dir: str, heartbeat: float = 30.0, stale_after: float = 300
    ) -> None:
        self.path = osp.join(work_dir, LOCK_NAME)
        self.heartbeat = heartbeat
        self.stale_after = stale_after
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _content(self) -> dict:
        return dict(
            host=socket.gethostname(),
            pid=os.getpid(),
            pid_start=_process_start_time(os.getpid()),
            started=time.strftime('%Y-%m-%d %H:%M:%S'),
            slurm_job_id=os.environ.get('SLURM_JOB_ID'),
            token=self.token,
        )

    def read(self) -> Tuple[Optional[dict], float]:
        """The current lock's content (None if absent) and heartbeat age."""
        try:
            with open(self.path) as f:
                text = f.read()
            age = time.time() - os.stat(self.path).st_mtime
        except FileNotFoundError:
            return None, 0.0
        try:
            info = json.loads(text)
        except ValueError:
            info = {}  # torn or foreign file: judged by its age only
        return (info if isinstance(info, dict) else {}), age

    def check(self) -> Optional[str]:
        """Raise if a live run holds the lock; do not take it.

        Returns:
            str | None: Why an existing lock is stale, None if there is
            no lock.

        Raises:
            WorkDirBusyError: When a live run holds the work dir.
        """
        info, age = self.read()
        if info is None:
            return None
        reason = stale_reason(info, age, self.stale_after)
        if reason is None:
            raise WorkDirBusyError(self._busy_message(info, age))
        return reason

    def acquire(self) -> Optional[str]:
        """Take the lock or raise.

        Returns:
            str | None: A message when a stale lock was replaced.

        Raises:
            WorkDirBusyError: When a live run holds the work dir.
        """
        os.makedirs(osp.dirname(self.path), exist_ok=True)
        note = None
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            info, age = self.read()
            reason = stale_reason(info or {}, age, self.stale_after)
            if reason is None:
                raise WorkDirBusyError(self._busy_message(info, age))
            note = (
                f'replaced the stale lock {self.path} of pid '
                f'{info.get("pid")} on {info.get("host")} ({reason})'
            )
            fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, 'w') as f:
            json.dump(self._content(), f)
        self._start_heartbeat()
        return note

    def _busy_message(self, info: Optional[dict], age: float) -> str:
        info = info or {}
        return (
            f'work dir {osp.dirname(self.path)} is in use by a run that is '
            f'still alive: pid {info.get("pid")} on {info.get("host")}, '
            f'started {info.get("started")} (lock file {self.path}, '
            f'heartbeat {age:.0f} s ago). Two runs in one work dir '
            "overwrite each other's checkpoints: wait for it to end, stop "
            'it, or pass another --work-dir. If that run is gone, delete '
            'the lock file.'
        )

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._beat, name='mmssl-run-lock', daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            try:
                os.utime(self.path)
            except OSError:
                return

    def release(self) -> None:
        """Stop the heartbeat; remove the file if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        info, _ = self.read()
        if info and info.get('token') == self.token:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass
