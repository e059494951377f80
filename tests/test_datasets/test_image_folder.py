import os
import os.path as osp

import numpy as np
import pytest

from mmssl.datasets import ImageFolderDataset, PathTable, scan_images

PIPE = [dict(type='LoadImageRobust'), dict(type='PackInputs')]


def test_scan_finds_every_extension_sorted(messy_root):
    root, files = messy_root
    found = scan_images(root)
    assert found == sorted(files)  # notes.txt left out, any case kept
    assert 'a/nested/deeper/gray8.PNG'.replace('/', os.sep) in found


def test_path_table_roundtrip():
    names = ['a.jpg', 'ü/ß.png', '', 'x' * 300]
    t = PathTable(names)
    assert len(t) == 4 and [t[i] for i in range(4)] == names
    assert t.buffer.dtype == np.uint8 and t.offsets.dtype == np.int64


def test_labels_sources_and_multiple_roots(messy_root, tmp_path):
    root, files = messy_root
    other = tmp_path / 'other' / 'a'
    other.mkdir(parents=True)
    import cv2

    cv2.imwrite(str(other / 'z.png'), np.zeros((8, 8, 3), np.uint8))
    ds = ImageFolderDataset(
        data_root=[root, str(tmp_path / 'other')],
        with_label=True,
        pipeline=PIPE,
    )
    # root-level files are left out when labels come from folders
    assert len(ds) == len(files) - 1 + 1
    assert ds.metainfo['classes'] == ('a', 'b', 'bad')
    info = ds.get_data_info(len(ds) - 1)
    assert info['gt_label'] == 0 and info['source'] == 1
    out = ds[0]
    assert out['data_samples'].gt_label.item() == 0
    assert out['data_samples'].source == 0


def test_ann_file(messy_root, tmp_path):
    root, _ = messy_root
    ann = tmp_path / 'list.txt'
    ann.write_text('a/rgb8.png 3\n# comment\n\nb/plain.bmp\n')
    ds = ImageFolderDataset(data_root=root, ann_file=str(ann), pipeline=PIPE)
    assert len(ds) == 2
    assert ds.get_data_info(0)['gt_label'] == 3
    assert 'gt_label' not in ds.get_data_info(1)
    assert ds[1]['inputs'].shape == (3, 24, 40)


def test_bad_files_are_skipped_deterministically(messy_root):
    root, files = messy_root
    ds = ImageFolderDataset(data_root=root, pipeline=PIPE, max_bad_ratio=1.0)
    bad_idx = [
        i
        for i in range(len(ds))
        if ds.get_img_path(i).startswith(osp.join(root, 'bad'))
    ]
    assert len(bad_idx) == 3
    skipped = []
    for i in bad_idx:
        out = ds[i]
        skipped += out['data_samples'].skipped_files
        assert out['inputs'].shape[0] == 3
    reasons = {
        osp.relpath(p, root).replace(os.sep, '/'): r for p, r in skipped
    }
    from tests.support.messy_files import BAD

    for rel, why in BAD.items():
        assert why in reasons[rel]
    # same substitute on a second pass (no RNG involved)
    again = ImageFolderDataset(
        data_root=root, pipeline=PIPE, max_bad_ratio=1.0
    )
    for i in bad_idx:
        assert (
            again[i]['data_samples'].img_path == ds[i]['data_samples'].img_path
        )


def test_too_many_bad_files_stop_with_list(tmp_path):
    for i in range(4):
        (tmp_path / f'{i}.jpg').write_bytes(b'')
    import cv2

    cv2.imwrite(str(tmp_path / 'good.png'), np.zeros((8, 8, 3), np.uint8))
    ds = ImageFolderDataset(
        data_root=str(tmp_path),
        pipeline=PIPE,
        max_bad_ratio=0.5,
        min_checked=2,
    )
    with pytest.raises(RuntimeError, match='max_bad_ratio') as e:
        for i in range(len(ds)):
            ds[i]
    assert 'zero-byte' in str(e.value) and '0.jpg' in str(e.value)


def test_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match='data_root'):
        ImageFolderDataset(data_root=str(tmp_path / 'nope'))
    with pytest.raises(FileNotFoundError, match='No images'):
        ImageFolderDataset(data_root=str(tmp_path))


def test_cache_reused_and_invalidated(messy_root, tmp_path, monkeypatch):
    import shutil

    import mmssl.datasets.image_index as image_index

    scans = []
    real_scan = image_index.scan_images

    def counting_scan(*args, **kwargs):
        scans.append(args[0])
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(image_index, 'scan_images', counting_scan)
    root = str(tmp_path / 'copy')
    shutil.copytree(messy_root[0], root)
    cache = str(tmp_path / 'index.npz')
    ds = ImageFolderDataset(data_root=root, cache_file=cache)
    n = len(ds)
    assert osp.isfile(cache) and scans == [root]
    # second build: the index comes from the cache, the folder is not
    # listed again
    ds2 = ImageFolderDataset(data_root=root, cache_file=cache)
    assert scans == [root]
    assert [ds2.get_img_path(i) for i in range(n)] == [
        ds.get_img_path(i) for i in range(n)
    ]
    # a new file deep in a nested folder changes that folder's mtime
    shutil.copy(
        osp.join(root, 'a', 'rgb8.png'),
        osp.join(root, 'a', 'nested', 'deeper', 'new.png'),
    )
    ds3 = ImageFolderDataset(data_root=root, cache_file=cache)
    assert len(ds3) == n + 1 and scans == [root, root]
    ds4 = ImageFolderDataset(
        data_root=root, cache_file=cache, with_label=True
    )  # options are in the key
    assert ds4.metainfo['classes'] == ('a', 'b', 'bad')


def test_multicrop_pipeline_over_folder(messy_root):
    root, _ = messy_root
    ds = ImageFolderDataset(
        data_root=root,
        max_bad_ratio=1.0,
        pipeline=[
            dict(type='LoadImageRobust'),
            dict(
                type='MultiCrop',
                global_size=32,
                local_size=16,
                num_local_crops=2,
            ),
            dict(type='BlockwiseMaskGenerator', patch_size=8),
            dict(type='PackInputs'),
        ],
    )
    for i in range(len(ds)):
        out = ds[i]
        assert [tuple(t.shape) for t in out['inputs']] == [(3, 32, 32)] * 2 + [
            (3, 16, 16)
        ] * 2
        assert tuple(out['data_samples'].mask.shape) == (2, 4, 4)


def test_indices_keep_a_subset(demo_data_root):
    from mmssl.datasets import ImageFolderDataset

    full = ImageFolderDataset(
        data_root=f'{demo_data_root}/train', with_label=True
    )
    first = ImageFolderDataset(
        data_root=f'{demo_data_root}/train', with_label=True, indices=5
    )
    picked = ImageFolderDataset(
        data_root=f'{demo_data_root}/train',
        with_label=True,
        indices=[3, 0, -1],
    )
    assert len(first) == 5
    assert [first.get_data_info(i)['img_path'] for i in range(5)] == [
        full.get_data_info(i)['img_path'] for i in range(5)
    ]
    assert [picked.get_data_info(i)['gt_label'] for i in range(3)] == [
        full.get_data_info(i)['gt_label'] for i in (3, 0, len(full) - 1)
    ]
    with pytest.raises(IndexError, match='out of range'):
        ImageFolderDataset(
            data_root=f'{demo_data_root}/train', indices=[len(full)]
        )


def test_plain_loader_becomes_robust(tmp_path):
    import cv2
    import numpy as np

    from mmssl.datasets import ImageFolderDataset

    cv2.imwrite(str(tmp_path / 'good.png'), np.full((8, 8, 3), 7, np.uint8))
    (tmp_path / 'bad.jpg').write_bytes(b'not an image')
    ds = ImageFolderDataset(
        data_root=str(tmp_path),
        pipeline=[dict(type='LoadImageFromFile'), dict(type='PackInputs')],
        max_bad_ratio=1.0,
    )
    assert type(ds.pipeline.transforms[0]).__name__ == 'LoadImageRobust'
    # the bad file is replaced by the good one instead of crashing
    sample = ds[0]
    assert sample['inputs'].shape == (3, 8, 8)
    assert int(sample['inputs'].float().mean()) == 7
    # a LoadImageFromFile with options the robust loader lacks is kept
    kept = ImageFolderDataset(
        data_root=str(tmp_path),
        pipeline=[dict(type='LoadImageFromFile', color_type='grayscale')],
    )
    assert type(kept.pipeline.transforms[0]).__name__ == 'LoadImageFromFile'
