"""The file index of :class:`~mmssl.datasets.ImageFolderDataset`.

A folder scan (one ``os.scandir`` listing per directory, no ``stat`` per
file), the class of each path by its first folder, and the index cache: an
``.npz`` with the paths as a :class:`PathTable`, the labels and sources,
keyed by the dataset's options and validated by the modification time of
every scanned directory (adding, removing or renaming a file changes its
directory's mtime), so a restart skips the scan of an unchanged tree.
"""

import bisect
import hashlib
import json
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from mmengine.logging import print_log

from .path_table import PathTable

IMG_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.bmp', '.tif', '.tiff', '.webp')


def scan_images(
    root: str,
    extensions: Sequence[str] = IMG_EXTENSIONS,
    dir_mtimes: Optional[Dict[str, int]] = None,
) -> List[str]:
    """Relative paths of image files under ``root`` (recursive, sorted).

    An explicit stack of ``os.scandir`` calls: one ``getdents`` listing per
    directory and no ``stat`` per file (``DirEntry.is_dir`` uses the type
    the listing already returned). Extensions match in any letter case.
    Symlinked directories are followed once (loops are cut).

    Args:
        root (str): Folder to search.
        extensions (Sequence[str]): Lower-case extensions with the dot.
        dir_mtimes (dict, optional): Filled with ``{dir: st_mtime_ns}`` of
            every directory visited (used to validate a cached index).
    """
    exts = tuple(e.lower() for e in extensions)
    out = []
    stack = ['']
    seen = set()
    while stack:
        rel = stack.pop()
        full = osp.join(root, rel) if rel else root
        try:
            st = os.stat(full)
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            if dir_mtimes is not None:
                dir_mtimes[rel] = st.st_mtime_ns
            prefix = rel + os.sep if rel else ''
            with os.scandir(full) as it:
                for entry in it:
                    name = entry.name
                    if name[0] == '.':
                        continue
                    if entry.is_dir():
                        stack.append(prefix + name)
                    elif name.lower().endswith(exts):
                        out.append(prefix + name)
        except PermissionError as e:
            print_log(
                f'Cannot list {full}: {e}; skipped.', 'current', level=30
            )
    out.sort()
    return out


def top_folders(rels: List[str]) -> List[str]:
    """Distinct first folders of sorted relative paths (one per run).

    Paths sharing the prefix ``d/`` are contiguous in sorted order, so
    each folder is found by one ``partition`` and a binary search.
    """
    out, i, n = [], 0, len(rels)
    while i < n:
        head, sep, _ = rels[i].partition(os.sep)
        if not sep:  # a file directly in the root
            i += 1
            continue
        out.append(head)
        i = bisect.bisect_left(rels, head + chr(ord(os.sep) + 1), i)
    return out


def top_folder_labels(rels: List[str], classes: List[str]) -> np.ndarray:
    """Class index of each sorted relative path (-1 for root files)."""
    labels = np.full(len(rels), -1, np.int32)
    idx = {c: k for k, c in enumerate(classes)}
    for head in top_folders(rels):
        a = bisect.bisect_left(rels, head + os.sep)
        b = bisect.bisect_left(rels, head + chr(ord(os.sep) + 1), a)
        labels[a:b] = idx[head]
    return labels


def index_cache_key(
    roots: List[str], ann_file: str, with_label: bool, extensions: tuple
) -> str:
    """Hash of the options an index depends on."""
    opts = dict(
        roots=roots, ann_file=ann_file, with_label=with_label, ext=extensions
    )
    return hashlib.sha1(json.dumps(opts).encode()).hexdigest()


def map_or_copy(cache_file: str, z, share_paths: bool) -> PathTable:
    """The cached paths, memory-mapped from the cache when possible."""
    if share_paths:
        try:
            return PathTable.load(cache_file, mmap=True)
        except (OSError, ValueError, KeyError):
            pass
    return PathTable.from_arrays(z['buffer'], z['offsets'])


def _unchanged(roots: List[str], meta: dict, ann_file: str) -> bool:
    """Whether every scanned directory (and the list file) still has the
    modification time the cache recorded."""
    try:
        for root, mtimes in zip(roots, meta['dir_mtimes']):
            for rel, mtime in mtimes.items():
                if os.stat(osp.join(root, rel)).st_mtime_ns != mtime:
                    return False
        if ann_file and os.stat(ann_file).st_mtime_ns != meta['ann_mtime']:
            return False
    except OSError:
        return False
    return True


def load_index_cache(
    cache_file: str, key: str, roots: List[str], ann_file: str, share: bool
) -> Optional[dict]:
    """The cached index, or None when the cache is missing, unreadable,
    made with other options (``key``) or older than the folders."""
    if not osp.isfile(cache_file):
        return None
    try:
        z = np.load(cache_file, allow_pickle=False)
        meta = json.loads(z['meta'].tobytes().decode())
    except Exception as e:  # noqa: BLE001
        print_log(
            f'Ignoring unreadable index cache {cache_file}: {e}',
            'current',
            level=30,
        )
        return None
    if meta.get('key') != key or not _unchanged(roots, meta, ann_file):
        return None
    return dict(
        paths=map_or_copy(cache_file, z, share),
        labels=z['labels'],
        sources=z['sources'],
        classes=meta['classes'],
    )


def save_index_cache(
    cache_file: str, key: str, index: dict, dir_mtimes: list, ann_file: str
) -> None:
    """Write the index atomically (a temporary file, then a rename)."""
    meta = dict(
        key=key,
        dir_mtimes=dir_mtimes,
        classes=index['classes'],
        ann_mtime=os.stat(ann_file).st_mtime_ns if ann_file else None,
    )
    os.makedirs(osp.dirname(osp.abspath(cache_file)), exist_ok=True)
    tmp = cache_file + f'.tmp{os.getpid()}.npz'
    np.savez(
        tmp,
        buffer=index['paths'].buffer,
        offsets=index['paths'].offsets,
        labels=index['labels'],
        sources=index['sources'],
        meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
    )
    os.replace(tmp, cache_file)


def build_index(
    roots: List[str], ann_file: str, with_label: bool, extensions: tuple
) -> Tuple[dict, list]:
    """Index the images of ``roots`` (or of the list file ``ann_file``):
    paths as a :class:`PathTable`, labels (the first folder's class, or
    the list file's integer, -1 without), sources (which root), the
    sorted classes, and the scanned directories' mtimes per root."""
    paths: List[str] = []
    labels: list = []
    sources: list = []
    dir_mtimes: list = []
    classes: List[str] = []
    if ann_file:
        base = roots[0] if roots else ''
        with open(ann_file, encoding='utf-8') as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                label = -1
                parts = line.rsplit(maxsplit=1)
                if len(parts) == 2 and parts[1].lstrip('-').isdigit():
                    line, label = parts[0], int(parts[1])
                paths.append(osp.join(base, line) if base else line)
                labels.append(label)
                sources.append(0)
    else:
        per_root = []
        for root in roots:
            mt: Dict[str, int] = {}
            per_root.append(scan_images(root, extensions, mt))
            dir_mtimes.append(mt)
        if with_label:
            classes = sorted(
                {d for rels in per_root for d in top_folders(rels)}
            )
        for s, (root, rels) in enumerate(zip(roots, per_root)):
            lab = None
            if with_label:
                lab = top_folder_labels(rels, classes)
                keep = np.flatnonzero(lab >= 0)
                if len(keep) < len(rels):  # drop files in the root
                    rels = [rels[i] for i in keep.tolist()]
                    lab = lab[keep]
            prefix = root if root.endswith(os.sep) else root + os.sep
            paths.extend([prefix + r for r in rels])
            labels.append(np.full(len(rels), -1) if lab is None else lab)
            sources.append(np.full(len(rels), s))
    if not ann_file:
        labels = np.concatenate([np.zeros(0)] + labels)
        sources = np.concatenate([np.zeros(0)] + sources)
    index = dict(
        paths=PathTable(paths),
        labels=np.asarray(labels, np.int32),
        sources=np.asarray(sources, np.int16),
        classes=classes,
    )
    return index, dir_mtimes
