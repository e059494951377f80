"""DenseCLBNNeck: DenseCL's outputs, with BatchNorm-centred hidden units."""

import torch
from mmpretrain.models.necks import DenseCLNeck

from mmssl.models.necks import DenseCLBNNeck


def _pairwise_cos(z: torch.Tensor) -> torch.Tensor:
    z = torch.nn.functional.normalize(z, dim=1)
    sim = z @ z.T
    return sim[~torch.eye(len(z), dtype=torch.bool)]


def test_outputs_are_densecl_shapes():
    torch.manual_seed(0)
    x = (torch.rand(4, 8, 3, 3),)
    for with_last_bn in (False, True):
        neck = DenseCLBNNeck(8, 16, 5, with_last_bn=with_last_bn)
        out = neck(x)
        ref = DenseCLNeck(8, 16, 5)(x)
        assert [o.shape for o in out] == [o.shape for o in ref]
        assert out[0].shape == (4, 5) and out[1].shape == (4, 5, 9)
    pooled = DenseCLBNNeck(8, 16, 5, num_grid=2)(x)
    assert pooled[1].shape == (4, 5, 4)


def test_batchnorm_spreads_projections_of_positive_features():
    """Positive inputs (pooled ReLU features) give DenseCLNeck nearly equal
    projections; the BatchNorm after the hidden layer centres them."""
    torch.manual_seed(0)
    x = (torch.rand(32, 64, 2, 2) + 1.0,)  # all positive, like post-ReLU
    plain = DenseCLNeck(64, 128, 32)(x)[0]
    torch.manual_seed(0)
    neck = DenseCLBNNeck(64, 128, 32).train()
    centred = neck(x)[0]
    # measured: mean cosine 0.99 without, 0.39 with the BatchNorm
    assert _pairwise_cos(plain).mean() > 0.95
    assert _pairwise_cos(centred).mean() < 0.6
    assert isinstance(neck.mlp[1], torch.nn.BatchNorm1d)
    assert isinstance(neck.mlp2[1], torch.nn.BatchNorm2d)
