"""Stop requests from signals: the handler only records the signal.

A scheduler asks a job to stop with SIGTERM (or SIGUSR1 ahead of a time
limit with ``#SBATCH --signal=USR1@120``); a user with Ctrl-C (SIGINT).
Acting inside the handler (saving, exiting) would cut an optimizer step
or a collective in half, so :class:`StopSignals` only records the first
signal; the runner looks at it at the next iteration boundary, where all
ranks agree, save a checkpoint and exit (see
:mod:`mmssl.engine.resume.preemption`).

A second Ctrl-C aborts: it raises :class:`AbortedBySignal` (a
``KeyboardInterrupt``) at once, and SIGINT gets the operating system's
default action back, so a third one ends the process whatever it is
doing. A SIGINT within ``repeat_after`` seconds of the first counts as the
same Ctrl-C: torchrun forwards the Ctrl-C it receives itself to workers
that the terminal already interrupted, so each worker sees it twice.

Standard library only.
"""

import os
import signal
import threading
import time
from typing import Dict, Iterable, List, Optional, Sequence, Union

DEFAULT_SIGNALS = ('SIGTERM', 'SIGUSR1', 'SIGINT')


def parse_signals(names: Iterable[Union[str, int]]) -> List[int]:
    """Signal numbers from names (``'SIGTERM'``, ``'TERM'``) or numbers.

    Args:
        names (Iterable[str | int]): Signals to handle.

    Returns:
        list[int]: Signal numbers, duplicates removed, order kept.

    Raises:
        ValueError: For a name this platform does not know.
    """
    out: List[int] = []
    for name in names:
        if isinstance(name, int):
            num = int(signal.Signals(name))
        else:
            key = str(name).upper()
            key = key if key.startswith('SIG') else 'SIG' + key
            if not hasattr(signal.Signals, key):
                raise ValueError(
                    f'Unknown signal {name!r} in signal_cfg.signals; use '
                    f'names such as {list(DEFAULT_SIGNALS)}.'
                )
            num = int(signal.Signals[key])
        if num not in out:
            out.append(num)
    return out


def signal_name(signum: int) -> str:
    """``15`` -> ``'SIGTERM'``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f'signal {signum}'


class AbortedBySignal(KeyboardInterrupt):
    """A second Ctrl-C: stop now, without saving."""


class StopSignals:
    """Record the first of ``signals``; abort on a second Ctrl-C.

    Args:
        signals (Sequence[str | int]): Signals to catch. Defaults to
            SIGTERM, SIGUSR1 and SIGINT.
        announce (bool): Write one line to stderr when the first signal
            arrives (with ``os.write``, safe inside a handler). Defaults
            to True.
        repeat_after (float): A SIGINT this many seconds or more after the
            first signal aborts; an earlier one is taken for the same
            Ctrl-C delivered twice. Defaults to 1.0.

    Attributes:
        received (int | None): The first signal caught, None before.
    """

    def __init__(
        self,
        signals: Sequence[Union[str, int]] = DEFAULT_SIGNALS,
        announce: bool = True,
        repeat_after: float = 1.0,
    ) -> None:
        self.signals = parse_signals(signals)
        self.announce = announce
        self.repeat_after = repeat_after
        self.received: Optional[int] = None
        self._first_at = 0.0
        self._previous: Dict[int, object] = {}

    @property
    def installed(self) -> bool:
        """Whether the handlers are in place."""
        return bool(self._previous)

    def install(self) -> bool:
        """Install the handlers, remembering the previous ones.

        Returns:
            bool: False when not called from the main thread (Python only
            lets the main thread set handlers); nothing is installed then.
        """
        if threading.current_thread() is not threading.main_thread():
            return False
        self.received = None
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, self._handle)
        return True

    def restore(self) -> None:
        """Put the previous handlers back (idempotent)."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum: int, frame) -> None:
        now = time.monotonic()
        if self.received is None:
            self.received, self._first_at = signum, now
            self._announce(signum)
            return
        if (
            signum == signal.SIGINT
            and now - self._first_at >= self.repeat_after
        ):
            # a third Ctrl-C kills at once, even inside a C call
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            raise AbortedBySignal(
                'aborted by a second Ctrl-C; nothing saved since the last '
                'checkpoint'
            )

    def _announce(self, signum: int) -> None:
        if not self.announce:
            return
        again = (
            ' (Ctrl-C again aborts without saving)'
            if signal.SIGINT in self._previous
            else ''
        )
        line = (
            f'mmssl: {signal_name(signum)} received (pid {os.getpid()}); '
            'a checkpoint is saved at the end of this iteration'
            f'{again}\n'
        )
        try:
            os.write(2, line.encode())
        except OSError:
            pass
