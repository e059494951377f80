"""The bundled demo data: sklearn digits as 32x32 PNG, fixed split."""

import glob
import os.path as osp

import cv2

from tools.misc.make_demo_dataset import make_demo_dataset


def test_demo_dataset_layout_and_determinism(tmp_path):
    counts = make_demo_dataset(str(tmp_path / 'a'))
    assert counts == {'train': 1438, 'val': 359}
    assert counts['train'] + counts['val'] == 1797
    for split, n in counts.items():
        files = sorted(glob.glob(str(tmp_path / 'a' / split / '*' / '*.png')))
        assert len(files) == n
        classes = {osp.basename(osp.dirname(f)) for f in files}
        assert classes == {str(d) for d in range(10)}
    img = cv2.imread(files[0], cv2.IMREAD_UNCHANGED)
    assert img.shape == (32, 32) and img.dtype.name == 'uint8'
    assert img.max() > 100  # ink is bright, not an empty image
    make_demo_dataset(str(tmp_path / 'b'))
    rel = lambda root: sorted(  # noqa: E731
        osp.relpath(f, root) for f in glob.glob(f'{root}/*/*/*.png')
    )
    assert rel(str(tmp_path / 'a')) == rel(str(tmp_path / 'b'))
    train = {
        osp.basename(f)
        for f in glob.glob(str(tmp_path / 'a' / 'train' / '*' / '*.png'))
    }
    val = {
        osp.basename(f)
        for f in glob.glob(str(tmp_path / 'a' / 'val' / '*' / '*.png'))
    }
    assert not train & val
