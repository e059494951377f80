"""TwoNormOrSingleDataPreprocessor: pairs as mmpretrain, single images as
SelfSupDataPreprocessor."""

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
