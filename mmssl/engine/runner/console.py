"""A short console: dumps go to the log file, warnings come once.

mmengine logs the environment, the whole config and the hook order (about
400 lines) before the first iteration. On the console, INFO records of
more than :data:`MAX_CONSOLE_LINES` lines are left out; the log file keeps
them. Processes other than rank 0 ignore Python warnings, so each warning
is shown once per job (dataloader workers other than worker 0 ignore them
too: ``disable_subprocess_warning``).
"""

import logging
import warnings

#: INFO records with more lines than this go to the log file only.
MAX_CONSOLE_LINES = 8


class LongRecordFilter(logging.Filter):
    """Drop INFO (and lower) records of more than ``max_lines`` lines."""

    def __init__(self, max_lines: int = MAX_CONSOLE_LINES) -> None:
        super().__init__('mmssl-long-records')
        self.max_lines = max_lines

    def filter(self, record: logging.LogRecord) -> bool:
        """True to show the record on the console."""
        if record.levelno >= logging.WARNING:
            return True
        return record.getMessage().count('\n') < self.max_lines


def shorten_console(logger: logging.Logger) -> bool:
    """Add :class:`LongRecordFilter` to the console handlers of ``logger``.

    Returns:
        bool: Whether a filter was added (False when already there or
        there is no console handler).
    """
    added = False
    for handler in logger.handlers:
        if isinstance(handler, logging.FileHandler) or not isinstance(
            handler, logging.StreamHandler
        ):
            continue
        if any(isinstance(f, LongRecordFilter) for f in handler.filters):
            continue
        handler.addFilter(LongRecordFilter())
        added = True
    return added


def warnings_on_rank_zero_only(rank: int) -> None:
    """Ignore Python warnings in every process but rank 0."""
    if rank != 0:
        warnings.simplefilter('ignore')
