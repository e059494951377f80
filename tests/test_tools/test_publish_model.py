"""publish_model: hash in the name, training state gone, backbone-only."""

import hashlib
import os
import os.path as osp
import pickle

import pytest
import torch
from mmengine.logging import HistoryBuffer, MessageHub

from mmssl.apis import publish_checkpoint
from mmssl.checkpoint import UnsafeCheckpointError, load_checkpoint
from mmssl.config import load_config
from mmssl.registry import MODELS
from tests.support.tools import load_tool, tiny_config
from tests.test_checkpoint.payload import save_payload_checkpoint


def _training_checkpoint(path, model, cfg_text):
    """What mmengine's CheckpointHook writes, in small."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.zero_grad()
    sum(p.sum() for p in model.parameters() if p.requires_grad).backward()
    opt.step()
    hub = MessageHub.get_instance('publish_test')
    hub.update_scalar('train/loss', 1.0)
    ckpt = dict(
        meta=dict(
            epoch=3,
            iter=30,
            cfg=cfg_text,
            seed=0,
            experiment_name='x',
            mmengine_version='0.10.7',
        ),
        state_dict=model.state_dict(),
        optimizer=opt.state_dict(),
        message_hub=hub.state_dict(),
        param_schedulers=[dict(last_epoch=3)],
    )
    torch.save(ckpt, path)


@pytest.fixture(scope='module')
def mocov3_ckpt(tmp_path_factory):
    cfg = load_config(tiny_config('vit_tiny_classifier'))
    model = MODELS.build(cfg.model)
    path = str(tmp_path_factory.mktemp('ckpt') / 'epoch_3.pth')
    _training_checkpoint(path, model, cfg.pretty_text)
    return path, cfg


def test_publish_full(mocov3_ckpt, tmp_path):
    src, _ = mocov3_ckpt
    tool = load_tool('model_converters/publish_model.py')
    out = tool.main([src, str(tmp_path / 'mocov3.pth')])  # no --trusted
    digest = hashlib.sha256(open(out, 'rb').read()).hexdigest()
    assert osp.basename(out) == f'mocov3-{digest[:8]}.pth'
    # plain metadata and tensors only: loads with weights_only=True
    ckpt = torch.load(out, weights_only=True)
    assert set(ckpt) == {'meta', 'state_dict'}
    assert all(t.device.type == 'cpu' for t in ckpt['state_dict'].values())
    meta = ckpt['meta']
    assert meta['algorithm'] == 'MoCoV3'
    assert meta['architecture']['type'] == 'VisionTransformer'
    assert (meta['epoch'], meta['iter']) == (3, 30)
    assert meta['mmssl_version'] and 'MoCoV3' in meta['config']
    src_state = load_checkpoint(src)['state_dict']
    assert set(ckpt['state_dict']) == set(src_state)


def test_backbone_only_keeps_the_online_encoder_of_moco_v3(
    mocov3_ckpt, tmp_path, capsys
):
    """MoCo v3 evaluates its base (online) encoder: published by default
    and named; --network momentum publishes the momentum encoder."""
    src, cfg = mocov3_ckpt
    tool = load_tool('model_converters/publish_model.py')
    out = tool.main([src, str(tmp_path / 'bb'), '--backbone-only'])
    printed = capsys.readouterr().out
    assert (
        'the online network `backbone.`; the momentum encoder is '
        '--network momentum' in printed
    )
    state = torch.load(out, weights_only=True)['state_dict']
    bare = MODELS.build(cfg.model.backbone)
    bare.load_state_dict(state, strict=True)
    src_state = load_checkpoint(src)['state_dict']
    key = 'patch_embed.projection.weight'
    assert torch.equal(state[key], src_state['backbone.' + key])
    # the momentum encoder differs (one SGD step), and --network takes it
    momentum = 'momentum_encoder.module.0.'
    assert not torch.equal(state[key], src_state[momentum + key])
    out2 = tool.main(
        [src, str(tmp_path / 'm'), '--backbone-only', '--network', 'momentum']
    )
    assert 'the momentum encoder `momentum_encoder.module.0.`' in (
        capsys.readouterr().out
    )
    published = torch.load(out2, weights_only=True)
    assert torch.equal(published['state_dict'][key], src_state[momentum + key])
    assert published['meta']['backbone_network'] == 'momentum'
    # --prefix still overrides both
    out3, info = publish_checkpoint(
        src, str(tmp_path / 'p.pth'), backbone_only=True, prefix='backbone'
    )
    assert info['prefix'] == 'backbone.'
    # ready for init_cfg=dict(type='Pretrained', checkpoint=...) downstream
    cfg_bb = dict(
        cfg.model.backbone, init_cfg=dict(type='Pretrained', checkpoint=out)
    )
    fresh = MODELS.build(cfg_bb)
    fresh.init_weights()
    assert torch.equal(fresh.state_dict()[key], state[key])


def test_default_path_accepts_mmengine_checkpoint(mocov3_ckpt, tmp_path):
    """No --trusted: mmengine's message hub (HistoryBuffer, numpy) loads."""
    src, _ = mocov3_ckpt
    with pytest.raises(pickle.UnpicklingError, match='HistoryBuffer'):
        torch.load(src, weights_only=True)  # what plain torch refuses
    assert isinstance(
        load_checkpoint(src)['message_hub']['log_scalars']['train/loss'],
        HistoryBuffer,
    )
    out, info = publish_checkpoint(src, str(tmp_path / 'p.pth'))
    assert info['removed'] == ['message_hub', 'optimizer', 'param_schedulers']
    assert osp.isfile(out)


def test_untrusted_pickle_gives_clear_error(mocov3_ckpt, tmp_path, capsys):
    """Anything else is refused, naming --trusted; the payload never runs."""
    src, _ = mocov3_ckpt
    marker = tmp_path / 'pwned'
    evil = save_payload_checkpoint(
        tmp_path / 'evil.pth', marker, load_checkpoint(src)
    )
    tool = load_tool('model_converters/publish_model.py')
    with pytest.raises(SystemExit) as exc:
        tool.main([evil, str(tmp_path / 'out')])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert 'posix.system' in err and '--trusted' in err
    with pytest.raises(UnsafeCheckpointError, match='trusted=True'):
        publish_checkpoint(evil, str(tmp_path / 'out'))
    assert not marker.exists()
    assert os.listdir(tmp_path) == ['evil.pth']  # nothing published
    out = tool.main([evil, str(tmp_path / 'out'), '--trusted'])
    assert marker.exists() and osp.isfile(out)
