"""knn_eval loads any checkpoint: whole model, bare or prefixed backbone."""

import pytest
import torch

from mmssl.config import load_config
from mmssl.registry import MODELS
from tests.support.tools import load_tool, tiny_config


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
        # the whole model loads, then the online encoder (MoCo v3 evaluates
        # its base encoder) goes into every backbone copy, and says so
        assert what.startswith('whole model')
        momentum = source.momentum_encoder.module[0].state_dict()
        assert not _same(momentum, backbone)
        for module in (model.backbone, model.momentum_encoder.module[0]):
            assert _same(module.state_dict(), backbone)
        assert _same(
            model.momentum_encoder.module[1].state_dict(),
            source.momentum_encoder.module[1].state_dict(),
        )
        assert 'online network `backbone.`' in what
        assert '--network momentum' in what
        return
    # the weights go into every backbone copy (MoCo v3: online + momentum)
    copies = (model.backbone, model.momentum_encoder.module[0])
    for module in copies:
        assert _same(module.state_dict(), backbone)
    assert 'backbone backbone, momentum_encoder.module.0' in what


def test_load_weights_refuses_unrelated_file(tmp_path):
    tool = load_tool('misc/knn_eval.py')
    ckpt = str(tmp_path / 'w.pth')
    torch.save({'foo.bar': torch.zeros(2)}, ckpt)
    with pytest.raises(SystemExit, match=r'0/\d+ \(0%\).*--prefix'):
        tool.load_weights(_model(0), ckpt, '', None)
    with pytest.raises(SystemExit, match='does not hold the backbone'):
        tool.load_weights(_model(0), ckpt, None, None)


def _tiny_folder(root, per_class: int, seed: int) -> str:
    """``root/<class>/*.png``: 3 classes of random 32 px colour images."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(seed)
    for cls in ('a', 'b', 'c'):
        (root / cls).mkdir(parents=True)
        for i in range(per_class):
            img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            cv2.imwrite(str(root / cls / f'{i}.png'), img)
    return str(root)


def test_bn_recalibrate_flag_sets_stats_of_the_bank(
    tmp_path, capsys, monkeypatch
):
    """--bn-recalibrate: the first BN holds the bank's exact stats."""
    from mmengine.dataset import default_collate

    import mmssl.evaluation.tasks.knn_eval as knn_run

    tool = load_tool('misc/knn_eval.py')
    seen = {}
    real = knn_run.bn_recalibrate

    def spy(runner):
        seen['runner'] = runner
        return real(runner)

    monkeypatch.setattr(knn_run, 'bn_recalibrate', spy)
    config = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'
    bank = _tiny_folder(tmp_path / 'train', 4, 0)
    query = _tiny_folder(tmp_path / 'val', 2, 1)
    argv = [config, '--train-folder', bank, '--val-folder', query]
    argv += ['--img-size', '32', '--batch-size', '5', '--num-workers', '0']
    metrics = tool.main(argv + ['--bn-recalibrate'])
    assert 0 <= metrics['knn/top1'] <= 100
    out = capsys.readouterr().out
    assert 'BatchNorm recalibrated on the kNN bank: 20 layers' in out
    assert '12 images in 3 batches' in out
    runner = seen['runner']
    model = runner.model
    images = [runner.test_dataloader.dataset.bank[i] for i in range(12)]
    data = model.data_preprocessor(default_collate(images), False)
    with torch.no_grad():
        x = model.backbone.conv1(data['inputs'])
    bn = model.backbone.norm1
    mean = x.mean((0, 2, 3))
    torch.testing.assert_close(bn.running_mean, mean, rtol=1e-4, atol=1e-5)
    var = x.var((0, 2, 3), unbiased=True)
    torch.testing.assert_close(bn.running_var, var, rtol=1e-4, atol=1e-5)
