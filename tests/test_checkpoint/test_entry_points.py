"""Library entry points that read checkpoints, under the policy.

The loaders here are made unsafe on purpose (``unsafe_local_scheme``,
``unsafe_scheme``: ``torch.load(..., weights_only=False)``), so only the
entry point's own policy scope stands between the file and its payload.
"""

import os.path as osp

import pytest
import torch

from mmssl.apis import init_model
from mmssl.checkpoint import UnsafeCheckpointError
from mmssl.config import load_config
from mmssl.models.utils import PretrainedCLIPTarget, PretrainedVQKDTarget
from mmssl.registry import MODELS

from .payload import TEST_SCHEME, save_payload_checkpoint

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SIMCLR = osp.join(ROOT, 'tests', 'data', 'configs', 'simclr_tiny.py')


def test_init_model_checkpoint(tmp_path, unsafe_local_scheme):
    marker = tmp_path / 'pwned'
    torch.manual_seed(0)
    weights = MODELS.build(load_config(SIMCLR).model).state_dict()
    path = save_payload_checkpoint(
        tmp_path / 'evil.pth', marker, {'state_dict': weights}
    )
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        init_model(SIMCLR, path)
    assert unsafe_local_scheme.calls == [path]
    assert not marker.exists()
    model = init_model(SIMCLR, path, trusted=True)
    assert marker.exists()
    key = 'backbone.conv1.weight'
    assert torch.equal(model.state_dict()[key], weights[key])


def test_init_model_init_cfg(tmp_path, unsafe_scheme):
    """``init_cfg=dict(type='Pretrained')`` runs inside the policy too."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)
    init_cfg = dict(type='Pretrained', checkpoint=TEST_SCHEME + path)
    opts = {'model.backbone.init_cfg': init_cfg}
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        init_model(SIMCLR, cfg_options=opts)
    assert unsafe_scheme.calls and not marker.exists()
    init_model(SIMCLR, cfg_options=opts, trusted=True)
    assert marker.exists()


def test_clip_target_generator(tmp_path, unsafe_scheme):
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'clip.pth', marker)
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        PretrainedCLIPTarget(tokenizer_path=TEST_SCHEME + path)
    assert unsafe_scheme.calls and not marker.exists()


def _tiny_vqkd(checkpoint):
    encoder = dict(
        arch=dict(
            embed_dims=8, num_layers=1, num_heads=1, feedforward_channels=8
        ),
        img_size=8,
        patch_size=4,
    )
    return PretrainedVQKDTarget(
        encoder_config=encoder,
        num_embed=4,
        embed_dims=4,
        init_cfg=dict(type='Pretrained', checkpoint=checkpoint),
    )


def test_vqkd_target_generator(tmp_path, unsafe_scheme):
    """VQ-KD and DALL-E load in ``init_weights`` (shared mixin)."""
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'vqkd.pth', marker)
    tokenizer = _tiny_vqkd(TEST_SCHEME + path)
    with pytest.raises(UnsafeCheckpointError, match='posix.system'):
        tokenizer.init_weights()
    assert unsafe_scheme.calls and not marker.exists()
