"""BatchNorm recalibration: exact data statistics, no weight change."""

import pytest
import torch
from mmengine.model import BaseModel
from torch import nn

from mmssl.evaluation.bn_recalibration import recalibrate_batchnorm

EPS = 1e-5


class _Tiny(BaseModel):
    """conv-BN-ReLU-dropout-conv-BN-pool-BN1d, and a BN never reached."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4, eps=EPS)
        self.drop = nn.Dropout(0.5)
        self.conv2 = nn.Conv2d(4, 5, 1)
        self.bn2 = nn.BatchNorm2d(5, eps=EPS)
        self.bn3 = nn.BatchNorm1d(5, eps=EPS)
        self.unused = nn.BatchNorm1d(7)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = self.drop(torch.relu(self.bn1(self.conv1(inputs))))
        return self.bn3(self.bn2(self.conv2(x)).mean((2, 3)))


def _model() -> _Tiny:
    torch.manual_seed(0)
    model = _Tiny()
    for bn in (model.bn1, model.bn2, model.bn3):  # not the defaults 1 / 0
        nn.init.normal_(bn.weight)
        nn.init.normal_(bn.bias)
    return model


def _batches() -> list:
    torch.manual_seed(1)
    # unequal batch sizes: a plain average of batch stats would be off
    return [dict(inputs=torch.randn(n, 3, 6, 6) * 3 + 1) for n in (5, 3, 2)]


def _train_bn(x, bn, dims):
    """What BatchNorm does in train mode, written out."""
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, unbiased=False, keepdim=True)
    shape = [1, -1] + [1] * (x.dim() - 2)
    w, b = bn.weight.view(shape), bn.bias.view(shape)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


@torch.no_grad()
def _expected(model, batches) -> dict:
    """Each BN's input over all batches, upstream BNs on batch stats."""
    seen = {'bn1': [], 'bn2': [], 'bn3': []}
    for batch in batches:
        h1 = model.conv1(batch['inputs'])
        h2 = model.conv2(torch.relu(_train_bn(h1, model.bn1, (0, 2, 3))))
        h3 = _train_bn(h2, model.bn2, (0, 2, 3)).mean((2, 3))
        seen['bn1'].append(h1.transpose(0, 1).reshape(4, -1))
        seen['bn2'].append(h2.transpose(0, 1).reshape(5, -1))
        seen['bn3'].append(h3.t())
    return {
        k: (torch.cat(v, 1).mean(1), torch.cat(v, 1).var(1, unbiased=True))
        for k, v in seen.items()
    }


def test_running_stats_are_the_exact_statistics_of_the_data():
    model = _model()
    batches = _batches()
    expected = _expected(model, batches)
    model.train()
    done = recalibrate_batchnorm(model, batches)
    assert done == dict(layers=3, unused=['unused'], batches=3, images=10)
    for name, (mean, var) in expected.items():
        bn = getattr(model, name)
        torch.testing.assert_close(bn.running_mean, mean, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(bn.running_var, var, rtol=1e-5, atol=1e-5)
        assert bn.num_batches_tracked.item() == 3
        assert bn.momentum == 0.1 and bn.training  # restored
    assert model.training and model.drop.training
    # never reached: left at its init
    assert torch.equal(model.unused.running_mean, torch.zeros(7))
    assert torch.equal(model.unused.running_var, torch.ones(7))
    assert model.unused.num_batches_tracked.item() == 0


def test_no_parameter_changes_and_no_gradients():
    model = _model()
    model.eval()
    before = {k: v.clone() for k, v in model.named_parameters()}
    recalibrate_batchnorm(model, _batches())
    for name, param in model.named_parameters():
        assert torch.equal(param, before[name]), name
        assert param.grad is None
    assert not model.training and not model.bn1.training


def test_errors_name_the_problem():
    model = _Tiny()
    for name in ('bn1', 'bn2', 'bn3', 'unused'):  # LayerNorm-only models
        setattr(model, name, nn.Identity())
    with pytest.raises(ValueError, match='no BatchNorm layer'):
        recalibrate_batchnorm(model, _batches())
    with pytest.raises(ValueError, match='recalibration data is empty'):
        recalibrate_batchnorm(_model(), [])
