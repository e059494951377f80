"""The bundled demo data: sklearn digits as 32x32 PNG, fixed split."""

import glob
import hashlib
import os.path as osp
from pathlib import Path

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

    def digests(root):
        """Relative path -> SHA-256 of the file's bytes."""
        return {
            osp.relpath(f, root): hashlib.sha256(
                Path(f).read_bytes()
            ).hexdigest()
            for f in glob.glob(f'{root}/*/*/*.png')
        }

    a, b = digests(str(tmp_path / 'a')), digests(str(tmp_path / 'b'))
    assert len(a) == 1797
    assert a == b  # same names and byte-identical files
    assert len(set(a.values())) > 1700  # distinct pictures, not one
    train = {
        osp.basename(f)
        for f in glob.glob(str(tmp_path / 'a' / 'train' / '*' / '*.png'))
    }
    val = {
        osp.basename(f)
        for f in glob.glob(str(tmp_path / 'a' / 'val' / '*' / '*.png'))
    }
    assert not train & val
