"""On-disk cache of decoded, converted and downscaled images.

Decoding a large 16-bit PNG costs far more (zlib inflate) than reading
the same picture back as raw uint8 pixels at a reduced size. The cache
keeps, per source file, exactly the array the loader produced before its
last channel step, so a hit returns the same output as a miss.

Entry layout (one file each): a 32-byte header (magic, format version,
height, width, channels, crc32 of the pixels) followed by the raw uint8
pixels. Entries are named by a hash of the absolute source path, its
modification time (ns) and size, and the conversion settings; a changed
source file or setting simply misses. Writes go to a unique temporary
name and are published with ``os.replace``, so several DataLoader
workers and ranks may write the same entry at once. Entries that are
truncated, have a wrong header or a wrong checksum are ignored (and
rewritten by the next miss).
"""

import hashlib
import os
import os.path as osp
import struct
import zlib
from typing import Optional

import numpy as np
from mmengine.logging import print_log

_MAGIC = b'MSDC'
_VERSION = 1
_HEADER = struct.Struct('<4sIIIII8x')  # magic, ver, h, w, c, crc -> 32 B


class DecodeCache:
    """Cache of loader outputs under ``root`` (see module docstring).

    Args:
        root (str): Cache folder; created on first write.
        settings (str): Text describing every option that changes the
            cached array (it is part of each entry's key).
        only_high_bit_depth (bool): Write entries only for images decoded
            with more than 8 bits per sample (16-bit, float). Reads are
            tried for every file. Defaults to True.
    """

    def __init__(
        self, root: str, settings: str, only_high_bit_depth: bool = True
    ) -> None:
        self.root = osp.abspath(osp.expanduser(root))
        self.settings = settings
        self.only_high_bit_depth = only_high_bit_depth
        self._write_failed = False

    def entry_path(self, path: str) -> Optional[str]:
        """Entry for the current version of ``path``; None if no stat."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = '\0'.join(
            (
                osp.abspath(path),
                str(st.st_mtime_ns),
                str(st.st_size),
                self.settings,
                str(_VERSION),
            )
        )
        digest = hashlib.sha1(key.encode('utf-8', 'surrogateescape'))
        name = digest.hexdigest()
        return osp.join(self.root, name[:2], name + '.px')

    @staticmethod
    def read(entry: str) -> Optional[np.ndarray]:
        """The cached array, or None when absent or not a valid entry."""
        try:
            with open(entry, 'rb') as f:
                size = os.fstat(f.fileno()).st_size
                if size < _HEADER.size:
                    return None
                data = np.empty(size, np.uint8)  # writable, no extra copy
                if f.readinto(memoryview(data)) != size:
                    return None
        except OSError:
            return None
        magic, ver, h, w, c, crc = _HEADER.unpack_from(data)
        body = data[_HEADER.size :]
        if (
            magic != _MAGIC
            or ver != _VERSION
            or c not in (1, 3)
            or body.size != h * w * c
            or zlib.crc32(body) != crc
        ):
            return None
        return body.reshape((h, w) if c == 1 else (h, w, c))

    def write(self, entry: str, img: np.ndarray) -> None:
        """Store ``img`` (uint8, HxW or HxWx3) atomically at ``entry``."""
        if img.dtype != np.uint8 or img.ndim not in (2, 3):
            return
        img = np.ascontiguousarray(img)
        h, w = img.shape[:2]
        c = 1 if img.ndim == 2 else img.shape[2]
        if c not in (1, 3):
            return
        body = img.tobytes()
        header = _HEADER.pack(_MAGIC, _VERSION, h, w, c, zlib.crc32(body))
        tmp = f'{entry}.tmp.{os.getpid()}.{os.urandom(4).hex()}'
        try:
            os.makedirs(osp.dirname(entry), exist_ok=True)
            with open(tmp, 'wb') as f:
                f.write(header)
                f.write(body)
            os.replace(tmp, entry)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if not self._write_failed:
                self._write_failed = True
                print_log(
                    f'Decode cache: cannot write under {self.root} ({e}); '
                    'images are decoded without the cache.',
                    'current',
                    level=30,
                )
