"""torch's launcher (torchrun) for ``tools/dist_train.sh`` and
``dist_test.sh``, without its traceback after a user error.

A worker that refuses the config or its options prints one ``error:``
line and exits with status 2 (:class:`mmssl.errors.UserError`). torchrun
then logs the failure and raises ``ChildFailedError``, whose traceback
and report (about 30 lines) would bury that line. Here a run whose first
failed worker exited with 2 ends with status 2 and nothing more; any
other failure ends with one line naming the rank and its exit status
(the worker's own output, traceback included, is above it), and a
signal (Ctrl-C, SIGTERM: torchrun passes it on to the workers, which
save and stop) with one line and status 128 + the signal's number. torch is
imported only when the launcher runs: the rest of ``mmssl.launch`` needs
the standard library only.

Usage: ``python -m mmssl.launch.torchrun [torchrun args] SCRIPT ARGS``.
"""

import logging
import sys
from typing import List, Optional

#: The exit status of a user error (mmssl.errors.UserError).
USER_ERROR = 2


class _DropUserErrorLog(logging.Filter):
    """Drops torch's ``failed (exitcode: 2) ...`` log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return f'failed (exitcode: {USER_ERROR})' not in message


def exit_status(code: int) -> int:
    """The launcher's status for a worker's exit code (a worker killed by
    signal N has code -N: 128 + N, as a shell reports it)."""
    return 128 - code if code < 0 else (code or 1)


def main(argv: Optional[List[str]] = None) -> int:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import (
        ChildFailedError,
    )
    from torch.distributed.run import parse_args, run

    logging.getLogger('torch.distributed.elastic.multiprocessing.api')\
        .addFilter(_DropUserErrorLog())  # fmt: skip
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args)
    except ChildFailedError as err:
        rank, failure = err.get_first_failure()
        if failure.exitcode == USER_ERROR:  # the worker said it in one line
            return USER_ERROR
        status = exit_status(failure.exitcode)
        print(
            f'error: {err.name} failed on rank {rank} with exit status '
            f'{status}; its output is above.',
            file=sys.stderr,
            flush=True,
        )
        return status
    except SignalException as sig:  # the workers had it too, and stopped
        print(
            f"dist_train: stopped by {sig.sigval.name}; the workers' lines "
            'above say what they saved.',
            file=sys.stderr,
            flush=True,
        )
        return 128 + int(sig.sigval)
    return 0


if __name__ == '__main__':
    sys.exit(main())
