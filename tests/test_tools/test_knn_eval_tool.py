"""knn_eval loads any checkpoint: whole model, bare or prefixed backbone."""

import pytest
import torch

from mmssl.registry import MODELS
from mmssl.utils import load_config

from ._utils import load_tool, tiny_config


def _model(seed: int):
    torch.manual_seed(seed)
    model = MODELS.build(load_config(tiny_config('vit_tiny_classifier')).model)
    model.init_weights()
    return model


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope='module')
def source():
    return _model(1)


@pytest.mark.parametrize(
    'layout,prefix',
    [
        ('bare', None),
        ('bare', ''),
        ('teacher', None),
        ('teacher', 'teacher.backbone.'),
        ('ddp_whole', None),
    ],
)
def test_load_weights_layouts(source, tmp_path, layout, prefix):
    tool = load_tool('misc/knn_eval.py')
    backbone = source.backbone.state_dict()
    if layout == 'bare':
        state = backbone
    elif layout == 'teacher':
        state = {f'teacher.backbone.{k}': v for k, v in backbone.items()}
        state['teacher.head.w'] = torch.zeros(3)  # other parts are ignored
    else:
        state = {f'module.{k}': v for k, v in source.state_dict().items()}
    ckpt = str(tmp_path / 'w.pth')
    torch.save(dict(state_dict=state, meta=dict(epoch=1)), ckpt)

    model = _model(0)
    assert not _same(model.backbone.state_dict(), backbone)
    what = tool.load_weights(model, ckpt, prefix, None)
    if layout == 'ddp_whole':
        assert what.startswith('whole model')
        assert _same(model.state_dict(), source.state_dict())
        return
    # the weights go into every backbone copy (MoCo v3: online + momentum)
    copies = (model.backbone, model.momentum_encoder.module[0])
    for module in copies:
        assert _same(module.state_dict(), backbone)
    assert 'backbone momentum_encoder.module.0' in what


def test_load_weights_refuses_unrelated_file(tmp_path):
    tool = load_tool('misc/knn_eval.py')
    ckpt = str(tmp_path / 'w.pth')
    torch.save({'foo.bar': torch.zeros(2)}, ckpt)
    with pytest.raises(SystemExit, match='pass --prefix'):
        tool.load_weights(_model(0), ckpt, '', None)
    with pytest.raises(SystemExit, match='no backbone weights'):
        tool.load_weights(_model(0), ckpt, None, None)
