import torch

from mmssl.registry import MODELS


def test_dino_head_shapes_and_weight_norm():
    head = MODELS.build(
        dict(
            type='DINOHead',
            in_channels=8,
            n_prototypes=10,
            hidden_channels=16,
            bottleneck_channels=4,
            nlayers=3,
        )
    )
    x = torch.randn(3, 8)
    out = head(x)
    assert out.shape == (3, 10)
    # logits are cosine similarities of the L2-normalised bottleneck with
    # unit-norm prototypes (gain fixed at 1)
    z = torch.nn.functional.normalize(head.mlp(x), dim=-1)
    v = head.last_layer.parametrizations.weight.original1
    expected = z @ torch.nn.functional.normalize(v, dim=-1).t()
    torch.testing.assert_close(out, expected)
    assert out.abs().max() <= 1 + 1e-5
    gain = head.last_layer.parametrizations.weight.original0
    assert not gain.requires_grad and torch.all(gain == 1)
    assert sum(isinstance(m, torch.nn.Linear) for m in head.mlp) == 3
    assert head.last_layer.bias is None


def test_dino_head_trainable_gain_and_one_layer():
    head = MODELS.build(
        dict(
            type='DINOHead',
            in_channels=8,
            n_prototypes=5,
            bottleneck_channels=4,
            nlayers=1,
            norm_last_layer=False,
            use_bn=True,
        )
    )
    assert head.last_layer.parametrizations.weight.original0.requires_grad
    assert head(torch.randn(2, 8)).shape == (2, 5)
