"""Every picture and evaluation tool on a folder from the wild.

The folder holds a corrupt JPEG, a 16-bit PNG whose values (0..1000)
decode to an all-black picture with ``cv2.imread``, grey images, RGBA,
and images of mixed, non-square sizes. Each tool must run, write its
figure(s) for the good files only, and name the corrupt file.
"""

import glob
import os
import os.path as osp

import cv2
import numpy as np
import pytest

from tests.support.tools import ROOT, load_tool, tiny_config

CORRUPT = 'a_corrupt.jpg'  # sorted first in its folder


def _write_split(root: str, rng, n_extra: int) -> list:
    """``root/cat`` and ``root/dog``; returns the good files."""
    good = []
    for cls in ('cat', 'dog'):
        folder = osp.join(root, cls)
        os.makedirs(folder)
        g16 = np.linspace(0, 1000, 48 * 40).reshape(48, 40)
        cv2.imwrite(osp.join(folder, 'b_16bit.png'), g16.astype(np.uint16))
        grey = rng.integers(0, 256, (30, 90), dtype=np.uint8)
        cv2.imwrite(osp.join(folder, 'c_grey_wide.png'), grey)
        rgba = rng.integers(0, 256, (40, 24, 4), dtype=np.uint8)
        cv2.imwrite(osp.join(folder, 'd_rgba_tall.png'), rgba)
        good += [osp.join(folder, f) for f in sorted(os.listdir(folder))]
        for i in range(n_extra):
            side = (24, 36, 64)[i % 3]
            img = rng.integers(0, 256, (side, 40, 3), dtype=np.uint8)
            path = osp.join(folder, f'e_rgb{i}.jpg')
            cv2.imwrite(path, img)
            good.append(path)
        data = cv2.imencode('.jpg', np.zeros((64, 64, 3), np.uint8))[1]
        with open(osp.join(folder, CORRUPT), 'wb') as f:
            f.write(data.tobytes()[:100])  # truncated
    return sorted(good)


@pytest.fixture(scope='module')
def bad_folder(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('wild'))
    rng = np.random.default_rng(0)
    train = _write_split(osp.join(root, 'train'), rng, 2)
    val = _write_split(osp.join(root, 'val'), rng, 1)
    return root, train, val


def _corrupt_named(text: str, folder: str) -> bool:
    """The tool's own line (not only the dataset's log) names both."""
    return all(
        f'skipped bad file {osp.join(folder, cls, CORRUPT)}: truncated JPEG'
        in text
        for cls in ('cat', 'dog')
    )


def _one_class(root: str, files: list) -> tuple:
    """``root/train/cat`` and its good files (every kind, fewer runs)."""
    folder = osp.join(root, 'train', 'cat')
    return folder, [f for f in files if f.startswith(folder + os.sep)]


def _corrupt_in(text: str, folder: str) -> bool:
    return f'skipped bad file {osp.join(folder, CORRUPT)}: truncated' in text


@pytest.mark.slow
def test_attention_and_pca_on_folder(bad_folder, tmp_path, capsys):
    from mmssl.datasets.transforms import LoadImageRobust
    from mmssl.visualization.attention import heatmap
    from mmssl.visualization.images import overlay, resize_keep_aspect

    root, train, _ = bad_folder
    folder, train = _one_class(root, train)
    tool = load_tool('analysis_tools/visualize_attention.py')
    args = [tiny_config('vit_tiny_classifier'), folder, '--output-dir']
    out = tool.main(args + [str(tmp_path / 'plain')])
    assert _corrupt_in(capsys.readouterr().out, folder)
    assert sorted(out['images']) == train
    assert out['skipped'][0][0] == osp.join(folder, CORRUPT)
    assert len(out['skipped']) == 1
    for path, res in out['images'].items():
        sub = (
            tmp_path
            / 'plain'
            / osp.relpath(path, folder).replace(os.sep, '__').rsplit('.', 1)[0]
        )
        assert (sub / 'attention.png').is_file(), sub
        assert (sub / 'pca.png').is_file()
        # the image as training decodes it, short side 32, aspect kept
        want = LoadImageRobust()(dict(img_path=path))['img']
        want = resize_keep_aspect(want, 32, multiple=4)[..., ::-1]
        assert np.array_equal(res['input'], want)
        h, w = want.shape[:2]
        assert res['grid'] == (h // 4, w // 4)
        head0 = cv2.imread(str(sub / 'attention_head0.png'))
        assert head0.shape == (h, w, 3)
    wide = out['images'][osp.join(folder, 'c_grey_wide.png')]
    assert wide['grid'] == (8, 24)  # 30x90 -> 32x96, not squashed
    g16 = out['images'][osp.join(folder, 'b_16bit.png')]['input']
    # min-max scaled as in training; cv2.imread gives values <= 3 here
    assert g16.max() >= 250 and g16.min() <= 5

    path = osp.join(folder, 'd_rgba_tall.png')
    args[1] = path  # one file: its pictures go to the output dir itself
    over = tool.main(args + [str(tmp_path / 'over'), '--overlay'])
    res = over['images'][path]
    h, w = res['input'].shape[:2]
    sub = tmp_path / 'over'
    got = cv2.imread(str(sub / 'attention_head1.png'))[..., ::-1]
    want = overlay(res['input'], heatmap(res['maps'][1], (w, h)))
    assert np.array_equal(got, want)


def test_overlay_blends_half_and_half():
    from mmssl.visualization.images import overlay

    img = np.full((2, 4, 3), 200, np.uint8)
    heat = np.zeros((1, 2, 3), np.uint8)
    heat[0, 1] = 100
    out = overlay(img, heat)
    assert out.shape == (2, 4, 3)
    assert (out[:, :2] == 100).all() and (out[:, 2:] == 150).all()


@pytest.mark.slow
def test_mae_reconstruction_on_folder(bad_folder, tmp_path, capsys):
    root, train, _ = bad_folder
    folder, train = _one_class(root, train)
    tool = load_tool('misc/mae_visualization.py')
    out_dir = tmp_path / 'rec'
    written = tool.main(
        [folder, tiny_config('mae_tiny'), 'none', str(out_dir)]
    )
    assert _corrupt_in(capsys.readouterr().out, folder)
    assert len(written) == len(train)
    for path in train:
        stem = osp.relpath(path, folder).replace(os.sep, '__')
        png = out_dir / (stem.rsplit('.', 1)[0] + '.png')
        assert cv2.imread(str(png)) is not None, png


def test_tsne_on_bad_folders(bad_folder, tmp_path, capsys):
    root, train, val = bad_folder
    tool = load_tool('analysis_tools/visualize_tsne.py')
    out = tool.main(
        [
            tiny_config('simclr_tiny'),
            '--work-dir',
            str(tmp_path),
            '--data-root',
            osp.join(root, 'train'),
            osp.join(root, 'val'),
            '--img-size',
            '32',
            '--n-iter',
            '250',
        ]
    )
    text = capsys.readouterr().out
    assert _corrupt_named(text, osp.join(root, 'train'))
    assert _corrupt_named(text, osp.join(root, 'val'))
    # every good image once, none of the stand-ins of the bad files
    assert len(out['features']) == len(train) + len(val)
    assert np.bincount(out['sources']).tolist() == [len(train), len(val)]
    assert sorted(set(out['labels'])) == [0, 1]
    assert cv2.imread(out['png']) is not None


def test_browse_dataset_on_bad_folder(bad_folder, tmp_path, capsys):
    browse_dataset = load_tool('analysis_tools/browse_dataset.py')

    root, _, _ = bad_folder
    folder = osp.join(root, 'train')
    out = tmp_path / 'browse'
    cfg = osp.join(ROOT, 'configs/_base_/datasets/custom_folder_multicrop.py')
    n = browse_dataset.main(
        [
            cfg,
            '--output-dir',
            str(out),
            '-n',
            '2',
            '--data-root',
            folder,
            '--cfg-options',
            'train_dataloader.dataset.pipeline.1.num_local_crops=1',
        ]
    )
    text = capsys.readouterr().out
    # named by the dataset's log line (where capsys sees the logger's
    # stream) or by the tool, never twice
    assert text.count(osp.join(folder, 'cat', CORRUPT)) <= 1, text
    assert n == 2
    assert sorted(p.name for p in out.iterdir()) == [
        'sample_0000.png',
        'sample_0001.png',
    ]


def test_knn_eval_on_bad_folders(bad_folder, capsys):
    root, _, _ = bad_folder
    tool = load_tool('misc/knn_eval.py')
    metrics = tool.main(
        [
            tiny_config('simclr_tiny'),
            '--train-folder',
            osp.join(root, 'train'),
            '--val-folder',
            osp.join(root, 'val'),
            '--img-size',
            '32',
            '--k',
            '3',
            '--num-workers',
            '0',
            '--batch-size',
            '4',
        ]
    )
    text = capsys.readouterr().out
    assert _corrupt_named(text, osp.join(root, 'train'))
    assert _corrupt_named(text, osp.join(root, 'val'))
    assert 0 <= metrics['knn/top1'] <= 100
    assert set(metrics) == {'knn/top1', 'knn/top5', 'knn/floor_top1'}


def test_val_folder_labelled_like_train(tmp_path):
    from mmssl.evaluation.folders import labelled_folder_dataset
    from mmssl.registry import DATASETS

    for cls in ('cat', 'dog'):
        os.makedirs(tmp_path / 'train' / cls)
        cv2.imwrite(str(tmp_path / 'train' / cls / 'x.png'), np.zeros((4, 4)))
    os.makedirs(tmp_path / 'val' / 'dog')
    os.makedirs(tmp_path / 'val' / 'owl')  # unknown to the bank
    for cls in ('dog', 'owl'):
        cv2.imwrite(str(tmp_path / 'val' / cls / 'y.png'), np.zeros((4, 4)))
    val = DATASETS.build(
        labelled_folder_dataset(str(tmp_path / 'val'), 4, ['cat', 'dog'])
    )
    assert len(val) == 1 and val.get_gt_labels().tolist() == [1]
    assert val.metainfo['classes'] == ('cat', 'dog')


def test_folder_listing_errors(tmp_path):
    from mmssl.evaluation.folders import folder_classes

    (tmp_path / 'flat.png').write_bytes(b'')
    with pytest.raises(FileNotFoundError, match='<root>/<class>/<image>'):
        folder_classes(str(tmp_path))
    (tmp_path / 'b').mkdir()
    (tmp_path / 'b' / 'x.PNG').write_bytes(b'')
    (tmp_path / 'a').mkdir()  # no image: not a class
    assert folder_classes(str(tmp_path)) == ['b']
    assert glob.glob(str(tmp_path / '*'))


def test_browse_dataset_custom_dataset_skips_bad_files(
    bad_folder, tmp_path, capsys
):
    """A plain mmcv LoadImageFromFile config is read robustly too."""
    browse_dataset = load_tool('analysis_tools/browse_dataset.py')

    root, train, _ = bad_folder
    folder = osp.join(root, 'train', 'cat')
    cfg = tmp_path / 'cfg.py'
    cfg.write_text(
        'train_dataloader = dict(dataset=dict(type="CustomDataset", '
        f'data_root="{folder}", with_label=False, pipeline=['
        'dict(type="LoadImageFromFile"), dict(type="PackInputs")]))\n'
    )
    n = browse_dataset.main([str(cfg), '--output-dir', str(tmp_path / 'o')])
    text = capsys.readouterr().out
    assert f'skipped bad file {osp.join(folder, CORRUPT)}: truncated' in text
    good = [f for f in train if f.startswith(folder + os.sep)]
    assert n == len(good) == len(list((tmp_path / 'o').iterdir()))
