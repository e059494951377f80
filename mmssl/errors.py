"""User errors: a config, option or file that cannot give a run.

Command-line tools catch :class:`UserError` at the top level and print its
message as one line (``error: ...``, exit status :attr:`exit_code`),
without a traceback unless ``--debug`` is given.
"""

import difflib
import os.path as osp
import re
import sys
from typing import Optional


class UserError(Exception):
    """A mistake the user can fix; the message says what and how.

    Attributes:
        exit_code (int): Status for a command-line tool: 2 for a wrong
            config, option or file, 1 when the run cannot start now (busy
            work dir, too few samples).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code

    def __str__(self) -> str:
        return str(self.args[0])


class TrainConfigError(UserError, ValueError):
    """The config or the options cannot give a run; the message says why."""


#: Exceptions a registry build raises for a value it cannot use.
BUILD_ERRORS = (ValueError, AssertionError, KeyError, TypeError)

_CLASS_PREFIX = re.compile(r'^(class `\w+` in [\w.]+: )+')


def root_message(exc: BaseException) -> str:
    """The first line of the innermost exception's message, without the
    ``class `X` in module:`` prefixes mmengine's registry adds."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = exc.__cause__ or exc.__context__
        if inner is None or not isinstance(inner, BUILD_ERRORS):
            break
        exc = inner
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    lines = [x for x in text.strip().splitlines() if x.strip()] or ['']
    return _CLASS_PREFIX.sub('', lines[0].strip('"\' '))


def _leaves(node, path=''):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f'{path}.{key}' if path else str(key))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from _leaves(value, f'{path}.{i}')
    elif isinstance(node, str):
        yield path, node


def find_config_value(cfg, message: str):
    """``(key, value)`` of the config entry whose string value the message
    names (quoted, or next to its key's name), else None."""
    leaves = list(_leaves(cfg.to_dict() if hasattr(cfg, 'to_dict') else cfg))
    quoted = re.findall(r"'([^']+)'", message)
    words = re.findall(r'[\w./-]+', message)
    lower = message.lower()
    for token in quoted + words:
        for key, value in leaves:
            if value != token or key.startswith('_'):
                continue
            if token in quoted or key.split('.')[-1].lower() in lower:
                return key, value
    return None


def config_build_error(exc: BaseException, cfg) -> TrainConfigError:
    """One line for a value the runner's build refused: the entry, the
    reason, the nearest valid values named in the reason."""
    message = root_message(exc)
    found = find_config_value(cfg, message)
    if found is None:
        return TrainConfigError(
            f'building the run failed: {message} (--debug shows the traceback)'
        )
    key, value = found
    quoted = [c for c in re.findall(r"'([^']+)'", message) if c != value]
    words = [c for c in re.findall(r'[\w-]+', message) if c != value]
    choices = list(dict.fromkeys(quoted or words))
    near = difflib.get_close_matches(value, choices, n=3, cutoff=0.6)
    if near:
        fix = (
            f'did you mean {" or ".join(repr(n) for n in near)}? '
            f'(--cfg-options {key}={near[0]})'
        )
    else:
        fix = f'fix it in the config or with --cfg-options {key}=...'
    return TrainConfigError(f'{key}={value!r}: {message.rstrip(".")}; {fix}')


def config_syntax_error(path: str, err: SyntaxError) -> TrainConfigError:
    """One line for a config file (or one it inherits) that is no valid
    Python: the parser's message, the line number and its text."""
    where = f'line {err.lineno}' if err.lineno else 'somewhere'
    text = (err.text or '').strip()
    shown = f': {text}' if text else ''
    return TrainConfigError(
        f'{path} (or a config it inherits) is not valid Python: {err.msg} '
        f'at {where}{shown}; fix that line of the config file.'
    )


def checkpoint_file_problem(path: str) -> Optional[str]:
    """Why ``path`` cannot be a checkpoint, or None: cheap checks a tool
    makes before it computes anything.

    A missing file; an empty one; a torch zip archive cut short (no
    central directory, see :func:`mmssl.launch.checkpoint_problem`); a
    file that is neither a zip archive, a pickle (legacy ``torch.save``)
    nor ``.safetensors``. Folders (sharded checkpoints) and URLs are left
    to the loader.
    """
    from mmssl.launch import checkpoint_problem

    if '://' in path or osp.isdir(path):
        return None
    if not osp.isfile(path):
        return 'no such file'
    if osp.getsize(path) == 0:
        return 'an empty file'
    if path.endswith('.safetensors'):
        return None
    with open(path, 'rb') as f:
        head = f.read(4)
    if head.startswith(b'PK'):  # torch.save's zip archive
        return checkpoint_problem(path, check_crc=False)
    if not head.startswith(b'\x80'):
        return (
            'not a checkpoint (neither a torch file, a pickle nor '
            '.safetensors)'
        )
    return None


def checkpoint_file_error(path: str, flag: str) -> Optional[UserError]:
    """:func:`checkpoint_file_problem` as a one-line user error naming
    the flag (``--checkpoint``) and the fix, or None."""
    problem = checkpoint_file_problem(path)
    if problem is None:
        return None
    return UserError(
        f'{flag} {path}: {problem}; pass a complete checkpoint file (the '
        "training's epoch_N.pth or a published .pth / .safetensors)."
    )


def one_line_exit(message: str) -> None:
    """Print a user error as one ``error: ...`` line on stderr and exit
    with status 2 (for tools: a ``SystemExit`` that carries its message
    ends this way)."""
    message = message.strip()
    if not message.startswith('error:'):
        message = f'error: {message}'
    print(message, file=sys.stderr, flush=True)
    sys.exit(2)
