"""Which checkpoints mmssl unpickles, and the one scope that enforces it.

Since torch 2.6, ``torch.load`` unpickles with ``weights_only=True`` by
default and refuses every type outside a small allowlist, so a plain
mmengine checkpoint (which pickles ``HistoryBuffer`` objects and numpy
scalars in its message hub) can no longer be resumed. Falling back to
``weights_only=False`` would run arbitrary code from any downloaded file.
mmssl instead allowlists exactly the types that mmengine and mmssl write into
checkpoints (:func:`safe_checkpoint_globals`) and refuses anything else with
an :class:`UnsafeCheckpointError` that names the offending types and the
explicit opt-in for files the user trusts:

* the environment variable ``MMSSL_TRUST_CHECKPOINT=1``,
* ``trust_checkpoint = True`` in a config (read by mmssl's runner),
* ``trusted=True`` in :func:`mmssl.checkpoint.load_checkpoint`, or the
  :func:`trusted_checkpoints` context manager,
* or, narrower, :func:`add_safe_checkpoint_globals` for one more type.

:func:`loading_policy` is a scope, not a patch: inside it every
``torch.load`` (mmssl's own and the ones mmengine makes) runs weights-only
with mmssl's allowlist, or fully unpickles when the file is trusted.
"""

import contextlib
import functools
import os
import pickle
import re
import threading
from collections import OrderedDict
from typing import Any, Iterable, Iterator, List, Optional

import torch

TRUST_ENV = 'MMSSL_TRUST_CHECKPOINT'
_TRUE = ('1', 'true', 'yes', 'on')

_state = threading.local()
_process_trust = {'value': False}
_extra_globals: List[Any] = []


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint pickles a type outside mmssl's allowlist.

    Attributes:
        source (str, optional): The refused file or URL.
        refused (str, optional): What it pickles, e.g. ``'posix.system'``.
    """

    def __init__(
        self,
        message: str,
        source: Optional[str] = None,
        refused: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.refused = refused


# --------------------------------------------------------------------------
# The allowlist
# --------------------------------------------------------------------------
def _history_buffer_getattr(obj: Any, name: str) -> Any:
    """Stand-in for ``builtins.getattr`` while unpickling.

    Python pickles a function defined in a class body (mmengine's
    ``HistoryBuffer`` keeps ``HistoryBuffer.min`` etc. in an instance dict)
    as ``getattr(HistoryBuffer, 'min')``. Allowing the real ``getattr``
    would let a file reach any attribute of any allowed object, so only
    plain methods of ``HistoryBuffer`` are served.
    """
    from mmengine.logging.history_buffer import HistoryBuffer

    if (
        obj is HistoryBuffer
        and isinstance(name, str)
        and not name.startswith('_')
        and callable(HistoryBuffer.__dict__.get(name))
    ):
        return getattr(obj, name)
    raise UnsafeCheckpointError(
        f'getattr({obj!r}, {name!r}) is not allowed in a checkpoint'
    )


def _numpy_globals() -> List[Any]:
    """Numpy callables and types that mmengine checkpoints pickle."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return []
    try:  # numpy >= 2
        from numpy._core import multiarray
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray
    out: List[Any] = [np.ndarray, np.dtype]
    # Files written under numpy 1.x name ``numpy.core``; under 2.x
    # ``numpy._core``. Accept both spellings for the same two functions.
    for mod in ('numpy.core.multiarray', 'numpy._core.multiarray'):
        out.append((multiarray._reconstruct, f'{mod}._reconstruct'))
        out.append((multiarray.scalar, f'{mod}.scalar'))
    dtypes = getattr(np, 'dtypes', None)  # numpy >= 1.25
    if dtypes is not None:
        for name in dir(dtypes):
            obj = getattr(dtypes, name)
            if isinstance(obj, type) and name.endswith('DType'):
                out.append(obj)
    return out


@functools.lru_cache(maxsize=1)
def _builtin_safe_globals() -> tuple:
    from mmengine.logging.history_buffer import HistoryBuffer

    return tuple(
        [
            HistoryBuffer,
            (_history_buffer_getattr, 'builtins.getattr'),
            (_history_buffer_getattr, '__builtin__.getattr'),
            OrderedDict,
        ]
        + _numpy_globals()
    )


def safe_checkpoint_globals() -> List[Any]:
    """Every global mmssl lets a checkpoint unpickle.

    Besides torch's own weights-only allowlist (tensors, dtypes, devices,
    ``OrderedDict``, containers and builtin scalars), these are mmengine's
    ``HistoryBuffer`` (message hub logs, including its statistics methods
    through a restricted ``getattr``), numpy arrays, scalars and dtypes
    (message hub runtime info) and whatever was added with
    :func:`add_safe_checkpoint_globals`.

    Returns:
        list: Objects or ``(object, 'module.qualname')`` pairs as accepted by
        ``torch.serialization.safe_globals``.
    """
    return list(_builtin_safe_globals()) + list(_extra_globals)


# Computed lazily: numpy and mmengine import at first use.
SAFE_CHECKPOINT_GLOBALS = safe_checkpoint_globals


def add_safe_checkpoint_globals(objs: Iterable[Any]) -> None:
    """Allow more types in checkpoints (e.g. a hook that saves a dataclass).

    Args:
        objs (Iterable): Classes or functions, or ``(obj, 'module.name')``
            pairs, as for ``torch.serialization.add_safe_globals``.
    """
    for obj in objs:
        if obj not in _extra_globals:
            _extra_globals.append(obj)


# --------------------------------------------------------------------------
# Trust
# --------------------------------------------------------------------------
def set_checkpoint_trust(trusted: bool) -> None:
    """Trust (or stop trusting) every checkpoint this process loads."""
    _process_trust['value'] = bool(trusted)


def checkpoint_trusted() -> bool:
    """Whether checkpoints may currently be fully unpickled."""
    if getattr(_state, 'trusted', False) or _process_trust['value']:
        return True
    return os.environ.get(TRUST_ENV, '0').strip().lower() in _TRUE


@contextlib.contextmanager
def trusted_checkpoints(trusted: bool = True) -> Iterator[None]:
    """Context manager: fully unpickle checkpoints loaded inside it.

    Only for files you trust: unpickling can run arbitrary code.
    """
    old = getattr(_state, 'trusted', False)
    _state.trusted = trusted
    try:
        yield
    finally:
        _state.trusted = old


@contextlib.contextmanager
def _env(name: str, value: Optional[str]) -> Iterator[None]:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


_GLOBAL_RE = re.compile(r'GLOBAL ([\w.]+)')


def _unsafe_error(source: str, err: Exception) -> UnsafeCheckpointError:
    text = str(err)
    names = _GLOBAL_RE.findall(text)
    said = text.split('WeightsUnpickler error:', 1)[-1].strip()
    said = next(
        (ln.strip() for ln in said.splitlines() if ln.strip()),
        text.strip().splitlines()[0] if text.strip() else repr(err),
    )
    what = ', '.join(names) if names else said
    return UnsafeCheckpointError(
        f'Refusing to load checkpoint {source}: it pickles {what}, which '
        'mmssl does not allow in checkpoints because unpickling it could '
        'run arbitrary code. If you trust this file, opt in explicitly: '
        f'set the environment variable {TRUST_ENV}=1, add '
        '`trust_checkpoint = True` to the config (or --cfg-options '
        'trust_checkpoint=True), or call '
        'mmssl.checkpoint.load_checkpoint(path, trusted=True). To allow '
        'only this type, call '
        'mmssl.checkpoint.add_safe_checkpoint_globals([...]).'
        f' (torch said: {said})',
        source=source,
        refused=what,
    )


def _is_weights_only_error(err: Exception) -> bool:
    text = str(err)
    return isinstance(err, pickle.UnpicklingError) and (
        'weights_only' in text
        or 'Unsupported global' in text
        or 'GLOBAL' in text
        or 'allowlist' in text
        or 'reduce' in text
    )


@contextlib.contextmanager
def _allowlist() -> Iterator[None]:
    with torch.serialization.safe_globals(safe_checkpoint_globals()):
        yield


@contextlib.contextmanager
def loading_policy(
    trusted: Optional[bool] = None, source: str = '<checkpoint>'
) -> Iterator[None]:
    """Scope in which every ``torch.load`` follows mmssl's policy.

    Untrusted (the default): ``weights_only=True`` is forced, even for
    callers that pass ``weights_only=False`` (``torch.hub``), with mmssl's
    allowlist; a refused type raises :class:`UnsafeCheckpointError`.
    Trusted: full unpickling.

    Args:
        trusted (bool, optional): None follows :func:`checkpoint_trusted`.
        source (str): Name used in errors.

    Raises:
        UnsafeCheckpointError: When a load inside the scope meets a type
            outside the allowlist and the file is not trusted.
    """
    if trusted is None:
        trusted = checkpoint_trusted()
    if trusted:
        with (
            trusted_checkpoints(True),
            _env('TORCH_FORCE_WEIGHTS_ONLY_LOAD', None),
            _env('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', '1'),
        ):
            yield
        return
    try:
        with (
            _allowlist(),
            _env('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', None),
            _env('TORCH_FORCE_WEIGHTS_ONLY_LOAD', '1'),
        ):
            yield
    except pickle.UnpicklingError as err:
        if isinstance(err, UnsafeCheckpointError) or not (
            _is_weights_only_error(err)
        ):
            raise
        raise _unsafe_error(source, err) from None
