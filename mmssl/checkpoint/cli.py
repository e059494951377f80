"""The trust policy on the command line: ``--trusted`` and the refusal.

Every tool that reads a checkpoint adds the flag with
:func:`add_trusted_argument`, passes :func:`trust_from_args` to the loader
and runs the load inside :func:`exit_on_untrusted`, so a refused file ends
the tool with one line that names the opt-in instead of a traceback.
"""

import argparse
import contextlib
import sys
from typing import Iterator, Optional

from .policy import TRUST_ENV, UnsafeCheckpointError

TRUSTED_FLAG = '--trusted'


def add_trusted_argument(
    parser: argparse.ArgumentParser, what: str = 'the checkpoint'
) -> None:
    """Add ``--trusted`` to a tool's parser."""
    parser.add_argument(
        TRUSTED_FLAG,
        action='store_true',
        help=f'fully unpickle {what}, which can run code stored in it: '
        f'only for files you trust (same as {TRUST_ENV}=1). Without it, '
        'only tensors and the types mmengine checkpoints hold are loaded',
    )


def trust_from_args(args: argparse.Namespace) -> Optional[bool]:
    """``True`` with ``--trusted``, else None (follow ``TRUST_ENV``)."""
    return True if getattr(args, 'trusted', False) else None


def refusal_message(err: UnsafeCheckpointError, flag: str = TRUSTED_FLAG):
    """The one-line refusal a tool prints, naming its opt-in."""
    source = err.source or 'the checkpoint'
    what = err.refused or 'a type outside the allowlist'
    return (
        f'error: refusing to load {source}: it pickles {what}, and '
        'unpickling that could run arbitrary code. If you trust this file, '
        f'rerun with {flag} (or set {TRUST_ENV}=1).'
    )


@contextlib.contextmanager
def exit_on_untrusted(flag: str = TRUSTED_FLAG) -> Iterator[None]:
    """Turn :class:`UnsafeCheckpointError` into a message and exit code 2.

    Raises:
        SystemExit: With status 2 when a load inside was refused.
    """
    try:
        yield
    except UnsafeCheckpointError as err:
        print(refusal_message(err, flag), file=sys.stderr)
        raise SystemExit(2) from None
