"""DEPRECATED shim: mmengine patching kept until the registered runner lands.

Everything here moved to :mod:`mmssl.checkpoint`; only
:func:`install_checkpoint_io` (import-time patching of mmengine, to be
removed) still lives here.
"""

import functools
import os
import os.path as osp
from typing import Any, Callable, Optional

from mmssl.checkpoint import (  # noqa: F401
    TRUST_ENV,
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    atomic_write_bytes,
    atomic_write_text,
    checkpoint_trusted,
    load_checkpoint,
    loading_policy,
    safe_checkpoint_globals,
    save_checkpoint_atomic,
    set_checkpoint_trust,
    torch_load_safe,
    trusted_checkpoints,
)


def load_checkpoint_safe(
    path: str, map_location: Any = 'cpu', trusted: bool = False
) -> Any:
    """Deprecated name of :func:`mmssl.checkpoint.load_checkpoint`."""
    return load_checkpoint(
        path, map_location, trusted=trusted or checkpoint_trusted()
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
        with loading_policy(source=filename):
            return loader(filename, map_location, *args, **kwargs)

    wrapped._mmssl_safe = True  # type: ignore[attr-defined]
    return wrapped


load_from_local._mmssl_safe = True  # type: ignore[attr-defined]


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
