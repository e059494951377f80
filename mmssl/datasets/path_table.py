"""Many file paths in two flat arrays, optionally memory-mapped."""

import os
import struct
import tempfile
import zipfile
from typing import Optional, Sequence, Tuple

import numpy as np

_LOCAL_HEADER = struct.Struct('<4s5H3I2H')  # zip local file header, 30 B


def _npz_member(f, name: str) -> Tuple[np.dtype, tuple, int]:
    """dtype, shape and byte offset of an uncompressed ``.npz`` member."""
    info = zipfile.ZipFile(f).getinfo(name + '.npy')
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f'{name} is compressed; cannot memory-map it.')
    f.seek(info.header_offset)
    fields = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if fields[0] != b'PK\x03\x04':
        raise ValueError(f'bad zip header for {name}')
    f.seek(info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1])
    version = np.lib.format.read_magic(f)
    read = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    shape, fortran, dtype = read(f)
    if fortran or dtype.hasobject:
        raise ValueError(f'{name} cannot be memory-mapped.')
    return dtype, shape, f.tell()


class PathTable:
    """Many strings in two NumPy arrays: utf-8 bytes and offsets.

    A list of Python strings costs ~50+ bytes of object header per entry
    and every read from a forked DataLoader worker touches its refcount,
    which copies the page (copy-on-write turns into copy-on-read). Two
    flat arrays are shared between forked workers for free.

    :meth:`load` (``mmap=True``) maps the arrays from an uncompressed
    ``.npz`` (the dataset's index cache, or :meth:`shared`'s file) instead:
    the pages live once in the page cache for every process on the node,
    and pickling the table (spawned DataLoader workers) sends the file, not
    the arrays. The file is held open, so it may be replaced or deleted
    (:meth:`shared` deletes it at once) without changing the table.
    """

    def __init__(self, strings: Sequence[str]) -> None:
        strings = list(strings)
        joined = ''.join(strings)
        if joined.isascii():  # one encode; lengths in chars are bytes
            data = joined.encode('ascii')
            lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        else:
            encoded = [s.encode('utf-8') for s in strings]
            data = b''.join(encoded)
            lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        self.offsets = np.zeros(len(strings) + 1, np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.buffer = np.frombuffer(data, np.uint8).copy()
        self._fd: Optional[int] = None

    @classmethod
    def from_arrays(
        cls, buffer: np.ndarray, offsets: np.ndarray
    ) -> 'PathTable':
        table = cls.__new__(cls)
        table.buffer, table.offsets, table._fd = buffer, offsets, None
        return table

    def save(self, file: str) -> None:
        """Write ``buffer`` and ``offsets`` to an uncompressed ``.npz``."""
        np.savez(file, buffer=self.buffer, offsets=self.offsets)

    @classmethod
    def load(cls, file: str, mmap: bool = True) -> 'PathTable':
        """Read (or with ``mmap`` map) the table saved in ``file``."""
        if not mmap:
            with np.load(file, allow_pickle=False) as z:
                return cls.from_arrays(z['buffer'], z['offsets'])
        fd = os.open(file, os.O_RDONLY)
        try:
            table = cls._map_fd(fd)
        except Exception:
            os.close(fd)
            raise
        return table

    @classmethod
    def _map_fd(cls, fd: int) -> 'PathTable':
        with os.fdopen(os.dup(fd), 'rb') as f:
            arrays = {}
            for name in ('buffer', 'offsets'):
                dtype, shape, offset = _npz_member(f, name)
                arrays[name] = (
                    np.memmap(f, dtype, 'r', offset, shape)
                    if np.prod(shape)
                    else np.zeros(shape, dtype)
                )
        table = cls.from_arrays(arrays['buffer'], arrays['offsets'])
        table._fd = fd
        return table

    @classmethod
    def shared(cls, table: 'PathTable', folder: Optional[str] = None):
        """A memory-mapped copy of ``table`` backed by an unlinked file."""
        fd, file = tempfile.mkstemp(suffix='.npz', dir=folder)
        try:
            with os.fdopen(fd, 'wb') as f:
                np.savez(f, buffer=table.buffer, offsets=table.offsets)
            return cls.load(file, mmap=True)
        finally:
            os.unlink(file)

    @classmethod
    def _from_proc_fd(cls, path: str, inode: Tuple[int, int]) -> 'PathTable':
        fd = os.open(path, os.O_RDONLY)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != inode:
            os.close(fd)
            raise OSError(
                f'{path} is no longer the file this PathTable was pickled '
                'from (unpickle it while the pickling process runs).'
            )
        return cls._map_fd(fd)

    def __reduce__(self):
        if self._fd is not None and os.path.isdir('/proc/self/fd'):
            # The child opens the parent's descriptor: the same file even
            # if it was replaced or deleted since.
            st = os.fstat(self._fd)
            return (
                PathTable._from_proc_fd,
                (
                    f'/proc/{os.getpid()}/fd/{self._fd}',
                    (st.st_dev, st.st_ino),
                ),
            )
        return (
            PathTable.from_arrays,
            (np.asarray(self.buffer), np.asarray(self.offsets)),
        )

    def __del__(self) -> None:
        if getattr(self, '_fd', None) is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass

    @property
    def is_mapped(self) -> bool:
        """True when the arrays are memory-mapped from a file."""
        return self._fd is not None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        a, b = self.offsets[i], self.offsets[i + 1]
        return self.buffer[a:b].tobytes().decode('utf-8')

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes + self.offsets.nbytes
