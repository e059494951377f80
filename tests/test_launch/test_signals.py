"""StopSignals: handlers only record; a second Ctrl-C is fatal."""

import os
import signal
import subprocess
import sys
import time

import pytest

from mmssl.launch.signals import StopSignals, parse_signals, signal_name


def test_parse_signals():
    assert parse_signals(['SIGTERM', 'usr1', signal.SIGINT, 'TERM']) == [
        signal.SIGTERM,
        signal.SIGUSR1,
        signal.SIGINT,
    ]
    with pytest.raises(ValueError, match='SIGNOPE'):
        parse_signals(['SIGNOPE'])
    assert signal_name(15) == 'SIGTERM'


def test_first_signal_recorded_handlers_restored():
    signums = (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)
    before = {s: signal.getsignal(s) for s in signums}
    stop = StopSignals(['SIGUSR1', 'SIGTERM', 'SIGINT'], announce=False)
    assert stop.install() and stop.installed
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.01)  # the handler runs at the next bytecode
        assert stop.received == signal.SIGUSR1
        # after the first signal, Ctrl-C gets its default (fatal) action
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
        os.kill(os.getpid(), signal.SIGTERM)  # only the first one counts
        time.sleep(0.01)
        assert stop.received == signal.SIGUSR1
    finally:
        stop.restore()
    assert not stop.installed
    for signum, handler in before.items():
        assert signal.getsignal(signum) is handler


_TWICE = """
import os, signal, sys, time
from mmssl.launch.signals import StopSignals
stop = StopSignals()
stop.install()
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.05)
print('first', stop.received, flush=True)
os.kill(os.getpid(), signal.SIGINT)
time.sleep(5)
print('still alive', flush=True)
"""


def test_second_ctrl_c_kills_at_once_without_traceback():
    out = subprocess.run(
        [sys.executable, '-c', _TWICE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == -signal.SIGINT  # 130 in a shell
    assert out.stdout.splitlines() == [f'first {int(signal.SIGINT)}']
    assert 'SIGINT received' in out.stderr
    assert 'Traceback' not in out.stderr
