"""FeatureEvalHook, the base of RankMeHook: which backbone gives the
features, and its argument check."""

import pytest
import torch
from torch import nn

from mmssl.evaluation.hooks.feature_eval_hook import FeatureEvalHook


class _Backbone(nn.Module):
    def __init__(self, value):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(float(value)))

    def forward(self, x):
        return (x.flatten(1)[:, :4] * self.w,)


class _Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = _Backbone(2.0)


class _Algo(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = _Backbone(1.0)
        self.teacher = _Teacher()


def test_feature_source_prefers_teacher():
    model, x = _Algo(), torch.ones(2, 3, 2, 2)
    fn, path = FeatureEvalHook()._feature_fn(model)
    assert path == 'teacher.backbone'
    assert torch.equal(fn(model, x)[0], torch.full((2, 4), 2.0))
    fn, path = FeatureEvalHook(prefer_teacher=False)._feature_fn(model)
    assert fn is None and 'mode' in path  # model(x, mode='tensor')
    fn, path = FeatureEvalHook(backbone_path='backbone')._feature_fn(model)
    assert torch.equal(fn(model, x)[0], torch.ones(2, 4))


def test_interval_below_one_is_refused():
    with pytest.raises(ValueError, match='interval'):
        FeatureEvalHook(interval=0)
