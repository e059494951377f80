"""The multi-channel tools: the synthetic 'cells' maker, channel_stats and
knn_eval's folder mode on a multi-channel config."""

import argparse
import os
import os.path as osp

import numpy as np
import pytest
from mmengine.config import Config

from tests.support.tools import ROOT, load_tool

tifffile = pytest.importorskip('tifffile')

CONFIG = osp.join(
    ROOT,
    'configs',
    'multichannel',
    'simclr_resnet18-w16_1xb64-20e_5ch_demo.py',
)


def test_maker_layout_determinism_and_class_signal(tmp_path):
    tool = load_tool('misc/make_multichannel_dataset.py')
    counts = tool.make_dataset(
        str(tmp_path / 'a'), size=32, train_per_class=12, val_per_class=1
    )
    assert counts == (36, 3)
    assert sorted(os.listdir(tmp_path / 'a' / 'train')) == list(tool.CLASSES)
    tool.make_dataset(
        str(tmp_path / 'b'), size=32, train_per_class=1, val_per_class=1
    )
    f = osp.join('val', 'ad-bc', '0000.tif')
    assert np.array_equal(
        tifffile.imread(tmp_path / 'a' / f),
        tifffile.imread(tmp_path / 'b' / f),
    )
    # the class is in which markers go together: paired markers correlate
    # more than unpaired ones, while every marker is about as bright in
    # every class
    means = {}
    for name in tool.CLASSES:
        corr, mean = np.zeros((5, 5)), np.zeros(5)
        for i in range(12):
            img = tifffile.imread(
                tmp_path / 'a' / 'train' / name / f'{i:04d}.tif'
            )
            chw = img if img.shape[0] == 5 else img.transpose(2, 0, 1)
            assert chw.shape == (5, 32, 32) and chw.dtype == np.uint16
            x = chw.reshape(5, -1).astype(np.float64)
            corr += np.corrcoef(x) / 12
            mean += ((x - x.min(1, keepdims=True)).mean(1)) / 12
        means[name] = mean / mean[1:].mean()
        paired = [corr[a, b] for a, b in tool.PAIRS[name]]
        unpaired = [
            corr[a, b]
            for a in range(1, 5)
            for b in range(a + 1, 5)
            if (a, b) not in tool.PAIRS[name]
        ]
        assert min(paired) > max(unpaired) + 0.1, (name, corr.round(2))
    for name in tool.CLASSES:  # no single marker gives the class away
        np.testing.assert_allclose(means[name][1:], 1.0, atol=0.25)


def test_channel_stats_match_numpy(multichannel_data_root, capsys):
    tool = load_tool('misc/channel_stats.py')
    folder = osp.join(multichannel_data_root, 'train')
    tool.main([folder, '--channels', '5', '--scale', '0', '65535'])
    out = capsys.readouterr().out
    assert out.startswith('6 files, 5 channels')
    pixels = []
    for cls in sorted(os.listdir(folder)):
        for f in sorted(os.listdir(osp.join(folder, cls))):
            img = tifffile.imread(osp.join(folder, cls, f))
            chw = img if img.shape[0] == 5 else img.transpose(2, 0, 1)
            pixels.append(chw.reshape(5, -1) / 65535.0)
    x = np.concatenate(pixels, axis=1)
    mean_line = f'mean={[round(float(m), 4) for m in x.mean(1)]},'
    std_line = f'std={[round(float(s), 4) for s in x.std(1)]},'
    assert mean_line in out and std_line in out, out


def test_knn_eval_folders_use_the_config_loader(tmp_path):
    tool = load_tool('misc/knn_eval.py')
    cfg = Config.fromfile(CONFIG)
    for split in ('train', 'val'):
        os.makedirs(tmp_path / split / 'a')
        tifffile.imwrite(
            tmp_path / split / 'a' / 'x.tif', np.zeros((5, 8, 8), np.uint16)
        )
    args = argparse.Namespace(
        train_folder=str(tmp_path / 'train'),
        val_folder=str(tmp_path / 'val'),
        img_size=32,
    )
    tool.use_folders(cfg, args)
    for part in ('bank', 'query'):
        pipeline = cfg.test_dataloader.dataset[part].pipeline
        assert pipeline[0] == dict(
            type='LoadMultiChannelTiff', channels=5, scale='percentile'
        )
        assert pipeline[2] == dict(type='CenterCrop', crop_size=32)


def test_maker_command_line(tmp_path, capsys):
    tool = load_tool('misc/make_multichannel_dataset.py')
    out = str(tmp_path / 'cells')
    tool.main([out, '--train-per-class', '1', '--val-per-class', '1'])
    assert 'wrote 3 train and 3 val 5-channel 16-bit TIFFs' in (
        capsys.readouterr().out
    )
    assert len(os.listdir(osp.join(out, 'val'))) == 3
    with pytest.raises(SystemExit, match='--size must be >= 16'):
        tool.main([out, '--size', '8'])


def test_check_dataset_uses_the_multichannel_loader(
    multichannel_data_root, tmp_path
):
    tool = load_tool('misc/check_dataset.py')
    root = tmp_path / 'cells'
    (root / 'a').mkdir(parents=True)
    good = osp.join(multichannel_data_root, 'train', 'ab-cd', '0000.tif')
    (root / 'a' / 'good.tif').write_bytes(open(good, 'rb').read())
    tifffile.imwrite(root / 'a' / 'four.tif', np.zeros((4, 8, 8), np.uint16))
    paths, loader = tool.collect(
        CONFIG, {'train_dataloader.dataset.data_root': str(root)}
    )
    assert loader['type'] == 'LoadMultiChannelTiff'
    bad = tool.check(paths, loader)
    assert [(osp.basename(p), r.split(' (')[0]) for p, r in bad] == [
        ('four.tif', 'has 4 channels')
    ]
