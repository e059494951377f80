"""A short console: dumps go to the log file, warnings come once.

mmengine logs the environment, the whole config and the hook order (about
400 lines) before the first iteration. On the console, INFO records of
more than :data:`MAX_CONSOLE_LINES` lines are left out; the log file keeps
them, and so it keeps the records of :data:`QUIET_RECORDS` (deprecation
notices of mmengine's own internals and the ``Exp name:`` line of every
epoch). Processes other than rank 0 ignore Python warnings, so each warning
is shown once per job (dataloader workers other than worker 0 ignore them
too: ``disable_subprocess_warning``); :data:`QUIET_WARNINGS`, which say
nothing a user can act on, are not shown at all. Nothing here is installed
when mmssl is imported: the runner (and ``prepare_train_cfg``) install it
for their run.
"""

import logging
import os
import re
import warnings
from typing import Mapping, Optional

#: INFO records with more lines than this go to the log file only.
MAX_CONSOLE_LINES = 8

#: Log records (message regexes) the console leaves out; the log file
#: keeps them. mmengine's CheckpointHook builds a FileClient and a
#: HardDiskBackend itself and logs their deprecation on every run; its
#: LoggerHook logs the run's name every epoch; its model builder says in
#: every one-process run that SyncBN layers (usually none) become BN.
QUIET_RECORDS = (
    r'Distributed training is not used, all SyncBatchNorm',
    r'"FileClient" will be deprecated in future',
    r'"HardDiskBackend" is the alias of "LocalBackend"',
    r'Exp name: ',
    # mmengine's init_weights dumps one record per parameter when the
    # logger has no file (tools that build a model without a runner)
    r'\n\S+ - torch\.Size\(',
)

#: ``(category, message regex)`` of Python warnings that are not shown:
#: mmengine sets OMP/MKL_NUM_THREADS=1 for dataloader workers when unset
#: (and says so in every process), and torch deprecates the
#: ``broadcast_buffers`` argument that mmengine's DDP wrapper passes.
QUIET_WARNINGS = (
    (UserWarning, r'Setting (OMP|MKL)_NUM_THREADS environment variable'),
    (FutureWarning, r'`broadcast_buffers` is deprecated'),
)

#: Variables that carry a process's rank, by launcher, before
#: torch.distributed is started.
RANK_VARIABLES = ('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK', 'PMI_RANK')


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


class QuietRecordFilter(logging.Filter):
    """Drop the records of :data:`QUIET_RECORDS` (console only)."""

    def __init__(self, patterns=QUIET_RECORDS) -> None:
        super().__init__('mmssl-quiet-records')
        self.pattern = re.compile('|'.join(f'(?:{p})' for p in patterns))

    def filter(self, record: logging.LogRecord) -> bool:
        """True to show the record on the console."""
        return not self.pattern.match(record.getMessage())


def shorten_console(logger: logging.Logger) -> bool:
    """Add :class:`LongRecordFilter` and :class:`QuietRecordFilter` to the
    console handlers of ``logger``.

    Returns:
        bool: Whether filters were added (False when already there or
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
        handler.addFilter(QuietRecordFilter())
        added = True
    return added


def rank_from_env(environ: Optional[Mapping[str, str]] = None) -> int:
    """This process's rank as its launcher set it (0 when none did)."""
    environ = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        value = environ.get(name, '')
        if value.isdigit():
            return int(value)
    return 0


def warnings_on_rank_zero_only(rank: int) -> None:
    """Ignore Python warnings in every process but rank 0."""
    if rank != 0:
        warnings.simplefilter('ignore')


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """A warning as one line, without the source line Python adds (a
    ``warnings.warn(`` echoed under every warning of a library)."""
    return f'{filename}:{lineno}: {category.__name__}: {message}\n'


def quiet_known_warnings(rank: Optional[int] = None) -> None:
    """Hide :data:`QUIET_WARNINGS`; every rank but 0 hides all warnings;
    the warnings shown are one line each (:func:`one_line_warning`).

    Args:
        rank (int, optional): This process's rank; default
            :func:`rank_from_env` (the process group may not exist yet).
    """
    warnings.formatwarning = one_line_warning
    for category, message in QUIET_WARNINGS:
        warnings.filterwarnings('ignore', message=message, category=category)
    warnings_on_rank_zero_only(rank_from_env() if rank is None else rank)
