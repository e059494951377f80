import math

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
    """nlayers=1: one Linear to the bottleneck (no BN, no GELU even with
    use_bn), L2 normalisation, then prototypes g_k * v_k / |v_k| with a
    trainable gain g; checked against a float64 loop computation."""
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
    assert len(head.mlp) == 1 and isinstance(head.mlp[0], torch.nn.Linear)
    assert (head.mlp[0].in_features, head.mlp[0].out_features) == (8, 4)
    params = head.last_layer.parametrizations.weight
    assert params.original0.requires_grad
    torch.manual_seed(0)
    with torch.no_grad():  # a gain per prototype different from 1
        params.original0.copy_(torch.rand(5, 1) + 0.5)
        head.mlp[0].bias.normal_()
    x = torch.randn(2, 8)
    lin_w = head.mlp[0].weight.double().tolist()
    lin_b = head.mlp[0].bias.double().tolist()
    gain = params.original0.double().flatten().tolist()
    v = params.original1.double().tolist()
    expected = []
    for row in x.double().tolist():
        z = [
            sum(a * c for a, c in zip(w, row)) + bb
            for w, bb in zip(lin_w, lin_b)
        ]
        nz = math.sqrt(sum(c * c for c in z))
        z = [c / nz for c in z]
        expected.append(
            [
                g
                * sum(a * c for a, c in zip(vk, z))
                / math.sqrt(sum(c * c for c in vk))
                for g, vk in zip(gain, v)
            ]
        )
    out = head(x)
    assert out.shape == (2, 5)
    torch.testing.assert_close(
        out.double(),
        torch.tensor(expected, dtype=torch.float64),
        rtol=1e-5,
        atol=1e-6,
    )


def test_dino_head_plain_prototype_layer():
    """weight_norm=False: DINOv3's plain Linear, one trainable weight,
    logits = normalised bottleneck @ W^T; fixed norms are refused."""
    cfg = dict(
        type='DINOHead',
        in_channels=8,
        n_prototypes=10,
        hidden_channels=16,
        bottleneck_channels=4,
        norm_last_layer=False,
        weight_norm=False,
    )
    head = MODELS.build(cfg)
    last = head.last_layer
    assert type(last) is torch.nn.Linear and last.bias is None
    assert [k for k in head.state_dict() if 'last_layer' in k] == [
        'last_layer.weight'
    ]
    assert 0.0 < last.weight.std() < 0.04  # truncated normal, std 0.02
    x = torch.randn(3, 8)
    z = torch.nn.functional.normalize(head.mlp(x), dim=-1)
    assert torch.allclose(head(x), z @ last.weight.T)
    try:
        MODELS.build(dict(cfg, norm_last_layer=True))
    except ValueError as err:
        assert 'set norm_last_layer=False' in str(err)
    else:
        raise AssertionError('norm_last_layer=True was accepted')
