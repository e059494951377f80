"""MMSelfSup 1.x checkpoints of Rotation Prediction and Relative Location
name their head's layer ``head.fc_cls.*``; mmssl's head calls it
``head.fc.*``. Every loader takes the old names."""

import copy

import pytest
import torch
from mmengine.runner import load_checkpoint as mmengine_load

from mmssl.checkpoint import load_pretrained
from mmssl.config import load_config
from mmssl.config.derived_sizes import resolve_model_sizes
from mmssl.registry import MODELS
from mmssl.setup_env import register_all_modules

CONFIGS = (
    'configs/rotation_pred/rotation-pred_resnet18-w16_1xb64-4e_demo.py',
    'configs/relative_loc/relative-loc_resnet18-w16_1xb64-4e_demo.py',
)


def _model(config: str, seed: int):
    register_all_modules()
    torch.manual_seed(seed)
    cfg = load_config(config)
    model = MODELS.build(resolve_model_sizes(copy.deepcopy(cfg.model)))
    model.init_weights()
    return model


@pytest.mark.parametrize('config', CONFIGS)
@pytest.mark.parametrize('loader', ['load_pretrained', 'mmengine'])
def test_fc_cls_loads_as_fc(config, loader, tmp_path):
    source = _model(config, seed=1)
    old = {
        k.replace('head.fc.', 'head.fc_cls.'): v
        for k, v in source.state_dict().items()
    }
    assert 'head.fc_cls.weight' in old and 'head.fc.weight' not in old
    path = str(tmp_path / 'mmselfsup.pth')
    torch.save(dict(state_dict=old, meta=dict()), path)
    model = _model(config, seed=0)
    assert not torch.equal(model.head.fc.weight, source.head.fc.weight)
    if loader == 'mmengine':  # load_from, resume, init_cfg Pretrained
        mmengine_load(model, path, strict=True)
    else:  # PretrainedStrip, warm start, the evaluation loaders
        report = load_pretrained(model, path, logger='silent')
        assert report.missing == [] and report.unexpected == []
        assert {'head.fc.weight', 'head.fc.bias'} <= set(report.matched)
    for name in ('weight', 'bias'):
        assert torch.equal(
            getattr(model.head.fc, name), getattr(source.head.fc, name)
        )
