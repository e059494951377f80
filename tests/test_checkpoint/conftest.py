"""Fixtures of the checkpoint tests: a real mmengine checkpoint, schemes."""

import os.path as osp

import pytest
import torch
from mmengine.model import BaseModel
from mmengine.optim import OptimWrapper
from mmengine.runner import Runner
from torch.utils.data import DataLoader

from mmssl.checkpoint import TRUST_ENV, set_checkpoint_trust
from mmssl.models.backbones import DINOVisionTransformer

from .payload import TEST_SCHEME, register_unsafe_scheme, restore_scheme
from .payload import unsafe_loader as _unsafe_loader

#: The tiny ViT inside :func:`mmengine_checkpoint` (mmssl layout).
VIT = dict(
    arch=dict(embed_dims=16, num_layers=2, num_heads=2),
    img_size=28,
    patch_size=14,
    num_register_tokens=1,
)


class TinyViTAlgorithm(BaseModel):
    """An algorithm in one line: a ViT and the mean square of its tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = DINOVisionTransformer(**VIT, out_type='raw')

    def forward(self, inputs, data_samples=None, mode='tensor'):
        out = self.backbone(inputs)[0]
        return dict(loss=out.pow(2).mean()) if mode == 'loss' else out


@pytest.fixture(scope='session')
def mmengine_checkpoint(tmp_path_factory) -> str:
    """A checkpoint written by mmengine's own Runner and CheckpointHook.

    Two SGD iterations, so the message hub holds ``HistoryBuffer`` logs
    (numpy arrays inside) as every real training checkpoint does.
    """
    work_dir = str(tmp_path_factory.mktemp('mmengine_run'))
    torch.manual_seed(0)
    model = TinyViTAlgorithm()
    data = [dict(inputs=torch.randn(3, 28, 28)) for _ in range(4)]
    runner = Runner(
        model=model,
        work_dir=work_dir,
        train_dataloader=DataLoader(data, batch_size=2),
        optim_wrapper=OptimWrapper(torch.optim.SGD(model.parameters(), 0.1)),
        train_cfg=dict(by_epoch=False, max_iters=2),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False)
        ),
        default_scope='mmssl',
        experiment_name='mmssl_checkpoint_fixture',
    )
    runner.train()
    path = osp.join(work_dir, 'iter_2.pth')
    assert osp.isfile(path)
    return path


@pytest.fixture(autouse=True)
def _untrusted(monkeypatch):
    """Every test starts without any trust opt-in."""
    monkeypatch.delenv(TRUST_ENV, raising=False)
    set_checkpoint_trust(False)
    yield
    set_checkpoint_trust(False)


@pytest.fixture
def unsafe_scheme():
    """``mmssltest://PATH`` loads PATH with ``weights_only=False``."""
    old = register_unsafe_scheme(TEST_SCHEME)
    _unsafe_loader.calls.clear()
    yield _unsafe_loader
    restore_scheme(TEST_SCHEME, old)


@pytest.fixture
def unsafe_local_scheme():
    """Local paths load with ``weights_only=False`` (mmengine's default
    local loader without torch's weights-only default)."""
    old = register_unsafe_scheme('')
    _unsafe_loader.calls.clear()
    yield _unsafe_loader
    restore_scheme('', old)
