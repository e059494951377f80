"""Progress that a pipe can read: a tqdm bar on a terminal, full lines
(``desc: 120/1000 (12%), 31 s, loss=0.512``) at least every
:data:`LINE_EVERY_S` seconds when stderr is a file or a pipe.

tqdm redraws one line with carriage returns; piped to ``tee`` or a log
file that is no line at all until the loop ends, so a probe of several
minutes looked stalled.
"""

import sys
import time
from typing import Any, Iterable, Optional

#: Seconds between two progress lines when stderr is not a terminal.
LINE_EVERY_S = 30.0


class LineProgress:
    """Iterate ``iterable``, printing a progress line to stderr at the
    start, every ``every`` seconds and at the end (tqdm's ``set_postfix``
    is accepted)."""

    def __init__(
        self,
        iterable: Iterable,
        desc: str = '',
        total: Optional[int] = None,
        every: float = LINE_EVERY_S,
        stream: Any = None,
        clock=time.monotonic,
    ) -> None:
        self.iterable = iterable
        self.desc = desc
        if total is None:
            try:
                total = len(iterable)  # type: ignore[arg-type]
            except TypeError:
                total = None
        self.total = total
        self.every = every
        self.stream = stream or sys.stderr
        self.clock = clock
        self.postfix = ''

    def set_postfix(self, refresh: bool = False, **values) -> None:
        """Values shown at the end of the next line."""
        self.postfix = ', '.join(f'{k}={v}' for k, v in values.items())

    def _line(self, done: int, seconds: float) -> None:
        of = ''
        if self.total:
            of = f'/{self.total} ({100 * done / self.total:.0f}%)'
        extra = f', {self.postfix}' if self.postfix else ''
        self.stream.write(f'{self.desc}: {done}{of}, {seconds:.0f} s{extra}\n')
        self.stream.flush()

    def __iter__(self):
        start = last = self.clock()
        done = 0
        self._line(0, 0.0)
        for item in self.iterable:
            yield item
            done += 1
            now = self.clock()
            if now - last >= self.every:
                last = now
                self._line(done, now - start)
        self._line(done, self.clock() - start)

    def __len__(self) -> int:
        return self.total or 0


def progress(
    iterable: Iterable,
    desc: str = '',
    total: Optional[int] = None,
    disable: bool = False,
    leave: bool = False,
):
    """A tqdm bar on a terminal, :class:`LineProgress` otherwise; the
    iterable itself when ``disable``."""
    if disable:
        return _Silent(iterable)
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(iterable, desc=desc, total=total, leave=leave)
    return LineProgress(iterable, desc=desc, total=total)


class _Silent:
    def __init__(self, iterable: Iterable) -> None:
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, refresh: bool = False, **values) -> None:
        pass
