"""Run tools/train.py in subprocesses and act on what they print."""

import os
import os.path as osp
import queue
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'tests', 'data', 'configs', 'simclr_tiny_iters.py')


def train_cmd(work_dir: str, data_root: str, *args: str) -> List[str]:
    """tools/train.py on the tiny iteration-based SimCLR config."""
    options = [a for a in args if '=' in a and not a.startswith('-')]
    flags = [a for a in args if a not in options]
    return [
        sys.executable,
        '-u',
        osp.join(ROOT, 'tools', 'train.py'),
        CONFIG,
        '--work-dir',
        work_dir,
        *flags,
        '--cfg-options',
        f'train_dataloader.dataset.data_root={data_root}/train',
        *options,
    ]


class Proc:
    """A subprocess whose merged output is read line by line."""

    def __init__(self, cmd: List[str], env: Optional[Dict] = None) -> None:
        full_env = dict(
            os.environ,
            OMP_NUM_THREADS='1',
            PYTHONUNBUFFERED='1',
            # this checkout's mmssl; the config imports
            # tests/data/slow_iter_hook.py
            PYTHONPATH=os.pathsep.join(
                [ROOT, osp.join(ROOT, 'tests', 'data')]
            ),
        )
        full_env.update(env or {})
        self.popen = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            cwd=ROOT,
        )
        self.lines: List[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = 180) -> str:
        """Block until a line containing ``text``; return that line."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self._queue.get(timeout=max(left, 0.01))
            except queue.Empty:
                line = ''
                if left <= 0:
                    self.kill()
                    raise TimeoutError(f'no {text!r} in:\n{self.output}')
                continue
            if line is None:
                self._queue.put(None)
                raise AssertionError(f'exited before {text!r}:\n{self.output}')
            self.lines.append(line)
            if text in line:
                return line

    def drain(self) -> None:
        """Take in the lines printed so far, so wait_for sees new ones."""
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._queue.put(None)
                return
            self.lines.append(line)

    def finish(self, timeout: float = 240) -> int:
        """Wait for the exit, collect the rest of the output; the status."""
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        while True:
            line = self._queue.get(timeout=30)
            if line is None:
                break
            self.lines.append(line)
        return rc

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=30)

    def signal(self, signum: int) -> None:
        self.popen.send_signal(signum)

    @property
    def output(self) -> str:
        return ''.join(self.lines)


def run(cmd: List[str], timeout: float = 240, **kwargs) -> Proc:
    """Run to the end; the finished :class:`Proc`."""
    proc = Proc(cmd, **kwargs)
    proc.finish(timeout)
    return proc
