"""Caches of preprocessed volumes that never hold one copy per rank.

Loading, reorienting and resampling a CT volume costs far more than the
random crops taken from it, so the deterministic part of a 3D pipeline is
worth caching. A cache that keeps every volume in every rank (MONAI's
``CacheDataset`` under DDP) holds N copies on an N-rank node. Two caches
that do not:

* :class:`ShardedMemoryCache`: rank r keeps only the files whose index
  ``i % world_size == r``, up to ``max_bytes`` per process, so the ranks
  together hold each file at most once;
* :class:`DiskCache`: one ``.npy`` file per volume in a shared folder,
  keyed by the file (path, size, modification time) and the preprocessing
  transforms, written atomically by whichever rank reads it first and read
  by all.
"""

import hashlib
import os
import os.path as osp
from typing import Optional

import numpy as np
import torch
from mmengine.dist import get_dist_info


class ShardedMemoryCache:
    """In-memory cache of this rank's share of the volumes.

    Args:
        max_bytes (int): Cap per process (rank or DataLoader worker).
        shard (bool): Keep only indices ``i % world_size == rank``.
            ``False`` caches whatever this process reads (N copies on N
            ranks: only for single-process runs and for measurements).
    """

    def __init__(self, max_bytes: int, shard: bool = True) -> None:
        self.max_bytes = int(max_bytes)
        self.shard = shard
        self.nbytes = 0
        self._store: dict = {}

    def owns(self, idx: int) -> bool:
        rank, world = get_dist_info()
        return not self.shard or idx % world == rank

    def get(self, idx: int, path: str) -> Optional[torch.Tensor]:
        return self._store.get(idx)

    def put(self, idx: int, path: str, img: torch.Tensor) -> None:
        size = img.numel() * img.element_size()
        if self.owns(idx) and self.nbytes + size <= self.max_bytes:
            self._store[idx] = img
            self.nbytes += size

    def __len__(self) -> int:
        return len(self._store)


class DiskCache:
    """Preprocessed volumes as ``.npy`` files shared by all ranks.

    Args:
        cache_dir (str): Folder (created); share it between the ranks of a
            node (or all nodes, on a shared file system).
        transform_key (str): Text that identifies the preprocessing (its
            repr); changing the transforms changes every key.
    """

    def __init__(self, cache_dir: str, transform_key: str) -> None:
        self.cache_dir = cache_dir
        self.transform_key = transform_key
        os.makedirs(cache_dir, exist_ok=True)

    def key(self, path: str) -> str:
        st = os.stat(path)
        text = '\n'.join(
            [osp.abspath(path), str(st.st_size), str(st.st_mtime_ns)]
            + [self.transform_key]
        )
        return hashlib.sha1(text.encode()).hexdigest()

    def _file(self, path: str) -> str:
        k = self.key(path)
        return osp.join(self.cache_dir, k[:2], k + '.npy')

    def get(self, idx: int, path: str) -> Optional[torch.Tensor]:
        f = self._file(path)
        try:
            return torch.from_numpy(np.load(f, allow_pickle=False))
        except (OSError, ValueError):  # absent or half-written: recompute
            return None

    def put(self, idx: int, path: str, img: torch.Tensor) -> None:
        f = self._file(path)
        if osp.exists(f):
            return
        os.makedirs(osp.dirname(f), exist_ok=True)
        tmp = f'{f}.tmp{os.getpid()}.npy'
        np.save(tmp, torch.as_tensor(img).numpy())
        os.replace(tmp, f)


__all__ = ['ShardedMemoryCache', 'DiskCache']
