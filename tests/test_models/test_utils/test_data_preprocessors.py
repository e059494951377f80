"""TwoNormOrSingleDataPreprocessor: pairs as mmpretrain, single images as
SelfSupDataPreprocessor."""

import pytest
import torch

from mmssl.registry import MODELS


def test_pairs_and_single_images():
    pre = MODELS.build(
        dict(
            type='TwoNormOrSingleDataPreprocessor',
            mean=[10.0, 20.0, 30.0],
            std=[2.0, 4.0, 8.0],
            second_mean=[127.5] * 3,
            second_std=[127.5] * 3,
            to_rgb=True,
        )
    )
    img = torch.randint(0, 255, (2, 3, 4, 4), dtype=torch.uint8)
    target = torch.randint(0, 255, (2, 3, 4, 4), dtype=torch.uint8)
    rgb = img.float()[:, [2, 1, 0]]
    mean = torch.tensor([10.0, 20.0, 30.0]).view(1, 3, 1, 1)
    std = torch.tensor([2.0, 4.0, 8.0]).view(1, 3, 1, 1)

    out = pre(dict(inputs=[img, target], data_samples=None), True)
    assert isinstance(out['inputs'], list) and len(out['inputs']) == 2
    assert torch.allclose(out['inputs'][0], (rgb - mean) / std)
    assert torch.allclose(
        out['inputs'][1], (target.float()[:, [2, 1, 0]] - 127.5) / 127.5
    )

    single = pre(dict(inputs=img, data_samples=None), False)['inputs']
    assert isinstance(single, torch.Tensor)
    assert torch.allclose(single, (rgb - mean) / std)


def test_multi_channel_per_channel_norm():
    mean = [100.0, 200.0, 300.0, 400.0, 500.0]
    std = [1.0, 2.0, 4.0, 8.0, 16.0]
    pre = MODELS.build(
        dict(type='MultiChannelDataPreprocessor', mean=mean, std=std)
    )
    x = torch.rand(2, 5, 4, 4) * 1000
    want = (x - torch.tensor(mean).view(1, 5, 1, 1)) / torch.tensor(std).view(
        1, 5, 1, 1
    )
    out = pre(dict(inputs=x, data_samples=None))['inputs']
    torch.testing.assert_close(out, want)
    # channel 3 by hand: (x - 400) / 8
    torch.testing.assert_close(out[1, 3, 2, 1], (x[1, 3, 2, 1] - 400) / 8)
    views = pre(dict(inputs=[x, x.flip(-1)], data_samples=None))['inputs']
    torch.testing.assert_close(views[0], want)
    torch.testing.assert_close(views[1], want.flip(-1))
    # uint16 values kept in float32 normalise the same way
    pre1 = MODELS.build(
        dict(type='MultiChannelDataPreprocessor', mean=[0.5], std=[0.25])
    )
    torch.testing.assert_close(
        pre1(dict(inputs=x, data_samples=None))['inputs'], (x - 0.5) / 0.25
    )


def test_multi_channel_refusals():
    pre = MODELS.build(
        dict(type='MultiChannelDataPreprocessor', mean=[0.0] * 5, std=[1] * 5)
    )
    with pytest.raises(ValueError, match=r'5 channels.*\(4 channels\)'):
        pre(dict(inputs=torch.rand(2, 4, 8, 8), data_samples=None))
    with pytest.raises(ValueError, match='to_rgb=False'):
        MODELS.build(
            dict(
                type='MultiChannelDataPreprocessor',
                mean=[0.0] * 5,
                std=[1.0] * 5,
                to_rgb=True,
            )
        )
    swap = MODELS.build(dict(type='MultiChannelDataPreprocessor', to_rgb=True))
    with pytest.raises(ValueError, match='got 5-channel images'):
        swap(dict(inputs=torch.rand(2, 5, 8, 8), data_samples=None))
    with pytest.raises(ValueError, match='one value per channel'):
        MODELS.build(
            dict(
                type='MultiChannelDataPreprocessor',
                mean=[0.0] * 5,
                std=[1.0] * 4,
            )
        )


def test_multi_channel_three_channels_match_selfsup():
    cfg = dict(mean=[10.0, 20.0, 30.0], std=[2.0, 4.0, 8.0], to_rgb=True)
    ours = MODELS.build(dict(type='MultiChannelDataPreprocessor', **cfg))
    theirs = MODELS.build(dict(type='SelfSupDataPreprocessor', **cfg))
    x = torch.randint(0, 255, (2, 3, 4, 4), dtype=torch.uint8)
    torch.testing.assert_close(
        ours(dict(inputs=[x], data_samples=None))['inputs'][0],
        theirs(dict(inputs=[x], data_samples=None))['inputs'][0],
    )
