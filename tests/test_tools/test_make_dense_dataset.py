"""make_dense_dataset.py: the ADE20K layout with depth, deterministic."""

import os.path as osp

import cv2
import numpy as np

from tests.support.tools import load_tool


def test_writes_ade20k_layout_with_depth(tmp_path):
    tool = load_tool('misc/make_dense_dataset.py')
    out = str(tmp_path / 'dense')
    tool.main([out, '--train', '6', '--val', '2'])
    names = open(osp.join(out, 'classes.txt')).read().split()
    assert names == list(tool.CLASSES)
    # the README names the layout, the baselines and their commands
    readme = open(osp.join(out, 'README.md')).read()
    assert '2 = disc, 3 = square' in readme and '6 = cross' in readme
    assert (
        '| raw pixels of each 8x8 patch | 14.76 | 2.04 | `python '
        'tools/eval.py configs/dinov2/dinov2_vit-tiny-p8_1xb64-40e_dense_'
        f'demo.py --task seg --data {out} --features pixels` |'
    ) in readme
    assert f'make_dense_dataset.py {out} --train 6 --val 2\n' in readme
    for split, n in (('training', 6), ('validation', 2)):
        for i in range(n):
            stem = f'{i:05d}'
            img = cv2.imread(osp.join(out, 'images', split, stem + '.jpg'))
            lab = cv2.imread(
                osp.join(out, 'annotations', split, stem + '.png'),
                cv2.IMREAD_UNCHANGED,
            )
            depth = cv2.imread(
                osp.join(out, 'depth', split, stem + '.png'),
                cv2.IMREAD_UNCHANGED,
            )
            assert img.shape == (64, 64, 3)
            assert lab.dtype == np.uint8 and lab.shape == (64, 64)
            assert set(np.unique(lab)) <= set(range(1, len(names) + 1))
            assert (lab > 1).any()  # at least one object
            assert depth.dtype == np.uint16 and depth.shape == (64, 64)
            # objects stand in front of the ground (1.5-5 m, ground 2.5-9)
            assert 1500 <= depth[lab > 1].min() and depth.max() <= 9000
    again = str(tmp_path / 'again')
    tool.main([again, '--train', '1', '--val', '0'])
    for sub in ('annotations', 'depth'):
        a = open(osp.join(out, sub, 'training', '00000.png'), 'rb').read()
        b = open(osp.join(again, sub, 'training', '00000.png'), 'rb').read()
        assert a == b


def test_colour_does_not_give_the_class_away():
    """Each class is drawn in several palette colours (over 40 scenes)."""
    tool = load_tool('misc/make_dense_dataset.py')
    colours = {c: set() for c in range(2, 7)}
    for i in range(40):
        img, lab, _ = tool.render(i)
        for c in colours:
            if (lab == c).sum() > 20:
                mean = img[lab == c].mean(0) // 40
                colours[c].add(tuple(mean.astype(int)))
    assert all(len(v) >= 3 for v in colours.values()), colours
