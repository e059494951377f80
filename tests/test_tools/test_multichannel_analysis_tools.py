"""The analysis tools on 5-channel 16-bit TIFFs with a 5-channel DINOv2
config: t-SNE of folders, attention maps and browse_dataset read the files
with the config's LoadMultiChannelTiff (not the RGB decoder) and draw them
with the documented channel -> colour mapping."""

import glob
import os.path as osp

import numpy as np
import pytest

from mmssl.visualization.images import CHANNEL_COLORS, channels_to_rgb
from tests.support.tools import ROOT, load_tool

tifffile = pytest.importorskip('tifffile')

CONFIG = osp.join(
    ROOT,
    'configs',
    'multichannel',
    'dinov2_vit-tiny-p4_1xb64-20e_5ch_demo.py',
)


def test_channels_to_rgb_mapping():
    # pixel (0, k) lights channel k only; pixel (1, 0) lights 0 and 2
    img = np.zeros((2, 6, 6), np.float32)
    for k in range(6):
        img[0, k, k] = 1000.0
    img[1, 0, [0, 2]] = 1000.0
    rgb = channels_to_rgb(img)
    assert rgb.dtype == np.uint8 and rgb.shape == (2, 6, 3)
    for k in range(6):
        np.testing.assert_array_equal(rgb[0, k], CHANNEL_COLORS[k] * 255)
    # channel 0 blue + channel 2 red, added
    assert rgb[1, 0].tolist() == [255, 0, 255]
    assert rgb[1, 1].tolist() == [0, 0, 0]
    picked = channels_to_rgb(img, rgb_channels=(2, -1, 0))
    assert picked[0, 2].tolist() == [255, 0, 0]  # channel 2 -> red
    assert picked[0, 0].tolist() == [0, 0, 255]  # channel 0 -> blue
    assert picked[0, 1].tolist() == [0, 0, 0]  # channel 1 not shown
    with pytest.raises(ValueError, match='below 6'):
        channels_to_rgb(img, rgb_channels=(0, 1, 6))


def _loaded(path):
    from mmssl.registry import TRANSFORMS

    loader = TRANSFORMS.build(
        dict(type='LoadMultiChannelTiff', channels=5, scale='percentile')
    )
    return loader(dict(img_path=path))['img']


@pytest.mark.slow
def test_attention_reads_five_channels(multichannel_data_root, tmp_path):
    tool = load_tool('analysis_tools/visualize_attention.py')
    img = osp.join(multichannel_data_root, 'val', 'ac-bd', '0000.tif')
    out = tool.main([CONFIG, img, '--output-dir', str(tmp_path)])
    assert out['num_heads'] == 4 and out['grid'] == (8, 8)
    assert out['maps'].shape == (4, 8, 8)
    # CLS attention on the 64 patches (the rest goes to the CLS token)
    total = out['maps'].sum(axis=(1, 2))
    assert ((total > 0.5) & (total <= 1.0 + 1e-5)).all(), total
    # the input picture is the composite of the config loader's output
    np.testing.assert_array_equal(out['input'], channels_to_rgb(_loaded(img)))
    assert len(glob.glob(str(tmp_path / 'attention_head*.png'))) == 4
    assert osp.isfile(tmp_path / 'pca.png')
    out = tool.main(
        [
            CONFIG,
            img,
            '--output-dir',
            str(tmp_path / 'rgb'),
            '--rgb-channels',
            '1',
            '2',
            '-1',
        ]
    )
    assert (out['input'][..., 2] == 0).all()
    assert out['input'][..., 0].max() == 255


def test_tsne_reads_five_channel_folders(multichannel_data_root, tmp_path):
    tool = load_tool('analysis_tools/visualize_tsne.py')
    out = tool.main(
        [
            CONFIG,
            '--work-dir',
            str(tmp_path),
            '--data-root',
            osp.join(multichannel_data_root, 'train'),
            '--perplexity',
            '2',
            '--n-iter',
            '250',
            '--feature',
            'cls',
        ]
    )
    assert out['features'].shape == (6, 64)  # 6 images, ViT width 64
    assert out['labels'].tolist() == [0, 0, 1, 1, 2, 2]
    assert out['embedding'].shape == (6, 2)
    assert np.isfinite(out['features']).all()
    assert osp.isfile(out['png'])


def test_browse_draws_five_channel_crops(multichannel_data_root, tmp_path):
    tool = load_tool('analysis_tools/browse_dataset.py')
    count = tool.main(
        [
            CONFIG,
            '--output-dir',
            str(tmp_path),
            '-n',
            '2',
            '--data-root',
            osp.join(multichannel_data_root, 'train'),
        ]
    )
    assert count == 2
    assert len(glob.glob(str(tmp_path / 'sample_*.png'))) == 2
