"""Reading and writing checkpoint files: the one safe loader, atomic saves.

Loading goes through :func:`load_checkpoint` (any path or URL mmengine's
``CheckpointLoader`` understands) or :func:`torch_load_safe` (a local file
or buffer), both under :func:`mmssl.checkpoint.policy.loading_policy`.

Saving. :func:`save_checkpoint_atomic` writes to a hidden temporary file in
the destination folder, flushes and fsyncs it, then ``os.replace``-s it onto
the final name, so a process killed during a save never leaves a truncated
``.pth`` under a checkpoint's name.
"""

import contextlib
import io
import os
import os.path as osp
import tempfile
from typing import Any, Callable, Iterator, Optional, Union

import torch

from .policy import checkpoint_trusted, loading_policy


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
    with loading_policy(trusted, source=source):
        return torch.load(
            f, map_location=map_location, weights_only=not trusted
        )


def load_checkpoint(
    path: str, map_location: Any = 'cpu', trusted: Optional[bool] = None
) -> Any:
    """Load a checkpoint file or URL, refusing types outside the allowlist.

    Goes through mmengine's ``CheckpointLoader``, so local paths, ``http(s)``
    URLs and the other mmengine schemes all work, each inside
    :func:`loading_policy`.

    Args:
        path (str): Local path or URL (``https://``, ``torchvision://``...).
        map_location: As for ``torch.load``. Defaults to ``'cpu'``.
        trusted (bool, optional): Fully unpickle the file. Only for files
            you trust. None follows :func:`checkpoint_trusted`
            (``MMSSL_TRUST_CHECKPOINT=1``). Defaults to None.

    Returns:
        Any: The loaded checkpoint, usually a dict.

    Raises:
        UnsafeCheckpointError: If the file pickles a type outside the
            allowlist and is not trusted.
    """
    from mmengine.runner.checkpoint import CheckpointLoader

    if not isinstance(path, str) or '://' not in path:
        path = osp.expanduser(str(path))
        if not osp.isfile(path):
            raise FileNotFoundError(f'checkpoint {path} does not exist.')
    with loading_policy(trusted, source=str(path)):
        return CheckpointLoader.load_checkpoint(
            path, map_location=map_location, logger='current'
        )


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


@contextlib.contextmanager
def atomic_destination(filename: str) -> Iterator[str]:
    """Yield a temporary path that becomes ``filename`` when the block ends.

    For writers that take a path (mmengine's ``save_checkpoint``): the
    caller writes the yielded path; on leaving the block it is fsynced and
    renamed onto ``filename``, then the folder is fsynced. If the block
    raises (or the process is killed), ``filename`` keeps its previous
    content and the temporary file is removed (or, after a kill, left
    under a hidden ``.tmp`` name that is never mistaken for a checkpoint).

    Args:
        filename (str): Destination path; its folder is created if needed.

    Yields:
        str: The temporary path to write, in the same folder.
    """
    dirname = osp.dirname(osp.abspath(filename))
    os.makedirs(dirname, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f'.{osp.basename(filename)}.', suffix='.tmp', dir=dirname
    )
    os.close(fd)
    try:
        yield tmp
        with open(tmp, 'rb') as f:
            os.fsync(f.fileno())
        # mkstemp creates 0600 files; give the usual umask-based mode.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, filename)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_dir(dirname)


def _atomic_write(write: Callable[[Any], Any], filename: str) -> None:
    # Hidden name without the .pth suffix: never mistaken for a checkpoint.
    with atomic_destination(filename) as tmp, open(tmp, 'wb') as f:
        write(f)
        f.flush()


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
