"""Safe checkpoint loading and atomic checkpoint saving.

Loading. Since torch 2.6, ``torch.load`` unpickles with ``weights_only=True``
by default and refuses every type outside a small allowlist, so a plain
mmengine checkpoint (which pickles ``HistoryBuffer`` objects and numpy
scalars in its message hub) can no longer be resumed. Falling back to
``weights_only=False`` would run arbitrary code from any downloaded file.
mmssl instead allowlists exactly the types that mmengine and mmssl write into
checkpoints (:data:`SAFE_CHECKPOINT_GLOBALS`) and refuses anything else with
an :class:`UnsafeCheckpointError` that names the offending types and the
explicit opt-in for files the user trusts:

* the environment variable ``MMSSL_TRUST_CHECKPOINT=1``,
* ``trust_checkpoint = True`` in a config (read by
  :class:`~mmssl.engine.hooks.AtomicCheckpointHook`),
* ``trusted=True`` in :func:`load_checkpoint_safe`, or the
  :func:`trusted_checkpoints` context manager,
* or, narrower, :func:`add_safe_checkpoint_globals` for one more type.

:func:`install_checkpoint_io` (run when :mod:`mmssl.utils` is imported, hence
by ``register_all_modules()`` and by any Runner whose default scope is
``mmssl``) re-registers every mmengine ``CheckpointLoader`` scheme behind
this policy, so ``Runner.resume``, ``load_from``, ``init_cfg`` of type
``Pretrained`` and every tool that calls ``_load_checkpoint`` /
``CheckpointLoader.load_checkpoint`` are covered.

Saving. :func:`save_checkpoint_atomic` writes to a hidden temporary file in
the destination folder, flushes and fsyncs it, then ``os.replace``-s it onto
the final name, so a process killed during a save never leaves a truncated
``.pth``. :func:`install_checkpoint_io` routes mmengine's
``save_checkpoint`` (used by ``Runner.save_checkpoint``) through it for local
paths.
"""

import contextlib
import functools
import io
import os
import os.path as osp
import pickle
import re
import tempfile
import threading
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

import torch
from mmengine.logging import print_log

TRUST_ENV = 'MMSSL_TRUST_CHECKPOINT'
_TRUE = ('1', 'true', 'yes', 'on')

_state = threading.local()
_process_trust = {'value': False}
_extra_globals: List[Any] = []


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint pickles a type outside mmssl's allowlist."""


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

        new_mod = 'numpy._core.multiarray'
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core import multiarray

        new_mod = 'numpy.core.multiarray'
    out: List[Any] = [np.ndarray, np.dtype]
    # Files written under numpy 1.x name ``numpy.core``; under 2.x
    # ``numpy._core``. Accept both spellings for the same two functions.
    for mod in {new_mod, 'numpy.core.multiarray', 'numpy._core.multiarray'}:
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


def _global_name(obj: Any) -> str:
    if isinstance(obj, tuple):
        return obj[1]
    return f'{obj.__module__}.{obj.__qualname__}'


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


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------
_HAS_SAFE_GLOBALS_CM = hasattr(torch.serialization, 'safe_globals')
_HAS_ADD_SAFE_GLOBALS = hasattr(torch.serialization, 'add_safe_globals')
_warned_old_torch = {'value': False}


@contextlib.contextmanager
def _allowlist() -> Iterator[None]:
    if _HAS_SAFE_GLOBALS_CM:
        with torch.serialization.safe_globals(safe_checkpoint_globals()):
            yield
    else:  # torch 2.4 has only the global registry
        torch.serialization.add_safe_globals(safe_checkpoint_globals())
        yield


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


@contextlib.contextmanager
def _load_policy(trusted: bool) -> Iterator[None]:
    """Make ``torch.load`` calls without ``weights_only`` follow the policy.

    Used around mmengine's remote loaders, which call ``torch.load``
    themselves.
    """
    if trusted:
        with (
            _env('TORCH_FORCE_WEIGHTS_ONLY_LOAD', None),
            _env('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', '1'),
        ):
            yield
    elif _HAS_ADD_SAFE_GLOBALS:
        with (
            _allowlist(),
            _env('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', None),
            _env('TORCH_FORCE_WEIGHTS_ONLY_LOAD', '1'),
        ):
            yield
    else:
        yield


_GLOBAL_RE = re.compile(r'GLOBAL ([\w.]+)')


def _unsafe_error(
    source: str, err: Exception, data: Optional[Any] = None
) -> UnsafeCheckpointError:
    names: List[str] = []
    if data is not None and hasattr(
        torch.serialization, 'get_unsafe_globals_in_checkpoint'
    ):
        try:
            if hasattr(data, 'seek'):
                data.seek(0)
            allowed = {_global_name(g) for g in safe_checkpoint_globals()}
            names = [
                n
                for n in torch.serialization.get_unsafe_globals_in_checkpoint(
                    data
                )
                if n not in allowed
            ]
        except Exception:
            names = []
    if not names:
        names = _GLOBAL_RE.findall(str(err))
    text = str(err)
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
        'mmssl.utils.load_checkpoint_safe(path, trusted=True). To allow '
        'only this type, call mmssl.utils.add_safe_checkpoint_globals([...]).'
        f' (torch said: {said})'
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


def torch_load_safe(
    f: Union[str, io.IOBase],
    map_location: Any = 'cpu',
    trusted: Optional[bool] = None,
    source: Optional[str] = None,
) -> Any:
    """``torch.load`` under mmssl's policy.

    Args:
        f (str | file-like): A path or an open binary file.
        map_location: As for ``torch.load``. Defaults to ``'cpu'``.
        trusted (bool, optional): Fully unpickle (only for trusted files).
            None follows :func:`checkpoint_trusted`. Defaults to None.
        source (str, optional): Name used in errors. Defaults to ``f``.

    Returns:
        Any: The unpickled object.

    Raises:
        UnsafeCheckpointError: If the file pickles a type outside the
            allowlist and the file is not trusted.
    """
    if trusted is None:
        trusted = checkpoint_trusted()
    source = source or (f if isinstance(f, str) else '<buffer>')
    if trusted:
        return torch.load(f, map_location=map_location, weights_only=False)
    if not _HAS_ADD_SAFE_GLOBALS:
        if not _warned_old_torch['value']:
            _warned_old_torch['value'] = True
            print_log(
                f'torch {torch.__version__} cannot allowlist types for '
                'weights-only loading (needs torch>=2.4); mmssl loads '
                'checkpoints with full unpickling as mmengine does. Only '
                'load files you trust, or upgrade torch.',
                logger='current',
                level=30,
            )
        return torch.load(f, map_location=map_location)
    try:
        with _allowlist():
            return torch.load(f, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        if not _is_weights_only_error(err):
            raise
        raise _unsafe_error(source, err, f) from None


def load_checkpoint_safe(
    path: str, map_location: Any = 'cpu', trusted: bool = False
) -> Any:
    """Load a checkpoint file or URL for tools, refusing unknown types.

    Goes through mmengine's ``CheckpointLoader``, so local paths, ``http(s)``
    URLs and the other mmengine schemes all work.

    Args:
        path (str): Local path or URL (``https://``, ``torchvision://``...).
        map_location: As for ``torch.load``. Defaults to ``'cpu'``.
        trusted (bool): Fully unpickle the file. Only for files you trust;
            also enabled by ``MMSSL_TRUST_CHECKPOINT=1``. Defaults to False.

    Returns:
        Any: The loaded checkpoint, usually a dict.

    Raises:
        UnsafeCheckpointError: If the file pickles a type outside the
            allowlist and is not trusted.
    """
    from mmengine.runner.checkpoint import CheckpointLoader

    install_checkpoint_io()
    with trusted_checkpoints(trusted or checkpoint_trusted()):
        return CheckpointLoader.load_checkpoint(
            path, map_location=map_location, logger='current'
        )


def load_from_local(filename: str, map_location: Any = None) -> Any:
    """mmengine ``load_from_local`` under mmssl's loading policy."""
    filename = osp.expanduser(filename)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'{filename} can not be found.')
    return torch_load_safe(filename, map_location=map_location)


def _wrap_loader(loader: Callable) -> Callable:
    """Run another mmengine scheme loader under mmssl's loading policy."""
    if getattr(loader, '_mmssl_safe', False):
        return loader

    @functools.wraps(loader)
    def wrapped(filename, map_location=None, *args, **kwargs):
        trusted = checkpoint_trusted()
        try:
            with _load_policy(trusted):
                return loader(filename, map_location, *args, **kwargs)
        except pickle.UnpicklingError as err:
            if trusted or not _is_weights_only_error(err):
                raise
            raise _unsafe_error(filename, err) from None

    wrapped._mmssl_safe = True  # type: ignore[attr-defined]
    return wrapped


load_from_local._mmssl_safe = True  # type: ignore[attr-defined]


# --------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------
def _fsync_dir(dirname: str) -> None:
    try:
        fd = os.open(dirname, os.O_RDONLY)
    except OSError:  # e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(data: bytes, filename: str) -> None:
    """Write ``data`` to ``filename`` so readers see old or new, never half.

    Args:
        data (bytes): The content.
        filename (str): Destination path; its folder is created if needed.
    """
    _atomic_write(lambda f: f.write(data), filename)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_write(write: Callable[[Any], Any], filename: str) -> None:
    dirname = osp.dirname(osp.abspath(filename))
    os.makedirs(dirname, exist_ok=True)
    # Hidden name without the .pth suffix: never mistaken for a checkpoint.
    fd, tmp = tempfile.mkstemp(
        prefix=f'.{osp.basename(filename)}.', suffix='.tmp', dir=dirname
    )
    try:
        with os.fdopen(fd, 'wb') as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600 files; give the usual umask-based mode.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, filename)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_dir(dirname)


def atomic_write_text(text: str, filename: str) -> None:
    """Text version of :func:`atomic_write_bytes`, e.g. for last_checkpoint."""
    atomic_write_bytes(text.encode('utf-8'), filename)


def save_checkpoint_atomic(checkpoint: dict, filename: str) -> None:
    """``torch.save`` to a temporary file in the same folder, then rename.

    A crash or kill during the save leaves the previous file (if any)
    untouched and no partial file under ``filename``.

    Args:
        checkpoint (dict): What to save.
        filename (str): Local destination path.
    """
    _atomic_write(lambda f: torch.save(checkpoint, f), filename)


_orig_save_checkpoint: dict = {}


def _is_local(filename: str, backend_args: Optional[dict]) -> bool:
    from mmengine.fileio import LocalBackend, get_file_backend

    if not isinstance(filename, (str, os.PathLike)):
        return False
    if str(filename).startswith('pavi://'):
        return False
    try:
        backend = get_file_backend(str(filename), backend_args=backend_args)
    except Exception:
        return False
    return isinstance(backend, LocalBackend)


def _atomic_mmengine_save_checkpoint(
    checkpoint, filename, file_client_args=None, backend_args=None
):
    """mmengine ``save_checkpoint`` that is atomic for local paths."""
    if file_client_args is None and _is_local(filename, backend_args):
        save_checkpoint_atomic(checkpoint, str(filename))
        return
    _orig_save_checkpoint['fn'](
        checkpoint,
        filename,
        file_client_args=file_client_args,
        backend_args=backend_args,
    )


_atomic_mmengine_save_checkpoint._mmssl_safe = True  # type: ignore


# --------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------
def install_checkpoint_io() -> None:
    """Put every mmengine checkpoint load and save behind mmssl's policy.

    Idempotent. Re-registers all ``CheckpointLoader`` schemes (local files
    with :func:`torch_load_safe`, the others wrapped so that their own
    ``torch.load`` calls use the allowlist) and makes
    ``mmengine.runner.checkpoint.save_checkpoint`` (also as imported by
    ``mmengine.runner.runner``) atomic for local paths.
    """
    import mmengine.runner as mm_runner
    import mmengine.runner.checkpoint as mm_ckpt
    import mmengine.runner.runner as mm_runner_mod
    from mmengine.runner.checkpoint import CheckpointLoader

    for prefix, loader in list(CheckpointLoader._schemes.items()):
        if getattr(loader, '_mmssl_safe', False):
            continue
        new = load_from_local if prefix == '' else _wrap_loader(loader)
        CheckpointLoader.register_scheme(prefix, new, force=True)

    save = mm_ckpt.save_checkpoint
    if not getattr(save, '_mmssl_safe', False):
        _orig_save_checkpoint['fn'] = save
        for mod in (mm_ckpt, mm_runner_mod, mm_runner):
            if getattr(mod, 'save_checkpoint', None) is save:
                mod.save_checkpoint = _atomic_mmengine_save_checkpoint
