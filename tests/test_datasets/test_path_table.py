"""Memory-mapped file list and the folder index order / labels."""

import os
import pickle

import numpy as np
import pytest

from mmssl.datasets import ImageFolderDataset, PathTable

NAMES = ['a.jpg', 'ü/ß.png', '', 'x' * 300, 'dir/b.png']


def _fd_target(table):
    return os.readlink(f'/proc/self/fd/{table._fd}')


def test_mapped_table_roundtrip_and_pickle(tmp_path):
    file = str(tmp_path / 't.npz')
    PathTable(NAMES).save(file)
    table = PathTable.load(file, mmap=True)
    assert table.is_mapped and isinstance(table.buffer, np.memmap)
    assert [table[i] for i in range(len(table))] == NAMES
    plain = PathTable.load(file, mmap=False)
    assert not plain.is_mapped and not isinstance(plain.buffer, np.memmap)
    PathTable(['changed']).save(str(tmp_path / 'new.npz'))
    os.replace(str(tmp_path / 'new.npz'), file)  # another rank rewrites
    blob = pickle.dumps(table)
    assert len(blob) < 300  # a file reference, not the paths
    clone = pickle.loads(blob)
    assert clone.is_mapped and [clone[i] for i in range(5)] == NAMES
    copied = pickle.loads(pickle.dumps(plain))
    assert [copied[i] for i in range(5)] == NAMES
    rebuild, (proc_path, inode) = table.__reduce__()
    assert rebuild(proc_path, inode)[1] == NAMES[1]
    with pytest.raises(OSError, match='no longer the file'):
        rebuild(proc_path, (inode[0], inode[1] + 1))  # a reused fd number


def test_shared_table_is_unlinked_and_picklable(tmp_path):
    table = PathTable.shared(PathTable(NAMES * 1000), str(tmp_path))
    assert os.listdir(tmp_path) == []  # nothing left on disk
    assert _fd_target(table).endswith('(deleted)')
    blob = pickle.dumps(table)
    assert len(blob) < 300
    clone = pickle.loads(blob)
    assert [clone[i] for i in range(len(clone))] == NAMES * 1000


def _tree(root):
    rels = [
        'a/x.png',
        'a-b.png',
        'a-b/y.jpg',
        'a.png',
        'a/b/c.JPG',
        'a0/q.png',
        'b/z.tif',
        'b/.hidden.png',
        '.h/d.png',
        'zz/é.png',
        'notes.txt',
    ]
    for rel in rels:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, 'wb').close()


@pytest.mark.parametrize('cache', [False, True])
def test_index_order_labels_and_mapping(tmp_path, cache):
    root = str(tmp_path / 'data')
    _tree(root)
    kw = dict(cache_file=str(tmp_path / 'i.npz')) if cache else {}
    for _ in range(2 if cache else 1):  # second pass loads the cache
        ds = ImageFolderDataset(data_root=root, with_label=True, **kw)
        got = [
            (os.path.relpath(ds.get_img_path(i), root), ds._labels[i])
            for i in range(len(ds))
        ]
        assert got == [
            ('a-b/y.jpg', 1),
            ('a/b/c.JPG', 0),
            ('a/x.png', 0),
            ('a0/q.png', 2),
            ('b/z.tif', 3),
            ('zz/é.png', 4),
        ]
        assert ds.metainfo['classes'] == ('a', 'a-b', 'a0', 'b', 'zz')
        assert ds._paths.is_mapped
        target = _fd_target(ds._paths)
        if cache:
            assert target == str(tmp_path / 'i.npz')
        else:
            assert target.endswith('(deleted)')
    flat = ImageFolderDataset(data_root=root, share_paths=False)
    assert not flat._paths.is_mapped
    assert [os.path.relpath(flat.get_img_path(i), root) for i in (0, 2)] == [
        'a-b.png',
        'a.png',
    ]
    assert len(flat) == 8 and (flat._labels == -1).all()
