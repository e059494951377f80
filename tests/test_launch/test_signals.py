"""StopSignals: handlers only record; a second Ctrl-C is fatal."""

import os
import signal
import time

import pytest

from mmssl.launch.signals import (
    AbortedBySignal,
    StopSignals,
    parse_signals,
    signal_name,
)


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
        os.kill(os.getpid(), signal.SIGTERM)  # only the first one counts
        time.sleep(0.01)
        assert stop.received == signal.SIGUSR1
    finally:
        stop.restore()
    assert not stop.installed
    for signum, handler in before.items():
        assert signal.getsignal(signum) is handler


def test_second_ctrl_c_aborts_a_duplicate_does_not(capfd):
    # a process started in the background of a non-interactive shell
    # inherits SIGINT ignored and Python keeps it so: start from Python's
    # own handler whatever the test process inherited
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = StopSignals(repeat_after=0.3)
    stop.install()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        # torchrun forwards the Ctrl-C a worker already got: same Ctrl-C
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
        except AbortedBySignal:
            pytest.fail('a repeat within repeat_after aborted')
        assert stop.received == signal.SIGINT
        assert 'SIGINT received' in capfd.readouterr().err
        time.sleep(0.35)
        with pytest.raises(AbortedBySignal, match='second Ctrl-C'):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        # a third Ctrl-C would kill at once, whatever the process does
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    finally:
        stop.restore()
        restored = signal.signal(signal.SIGINT, inherited)
    assert restored is signal.default_int_handler
