"""Safe loading and atomic saving of checkpoints."""

import argparse
import os
from collections import OrderedDict

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer
from mmengine.runner.checkpoint import _load_checkpoint as _mm_load

from mmssl.checkpoint import (
    UnsafeCheckpointError,
    add_safe_checkpoint_globals,
    loading_policy,
    save_checkpoint_atomic,
    torch_load_safe,
    trusted_checkpoints,
)
from mmssl.checkpoint import load_checkpoint as load_checkpoint_safe
from mmssl.checkpoint.policy import _extra_globals


def _load_checkpoint(path, **kwargs):
    """mmengine's loader inside mmssl's scope (as SSLRunner calls it)."""
    with loading_policy(source=path):
        return _mm_load(path, **kwargs)


needs_allowlist = pytest.mark.skipif(
    not hasattr(torch.serialization, 'add_safe_globals'),
    reason='torch < 2.4 cannot allowlist weights-only types',
)


def _mmengine_like_checkpoint() -> dict:
    """What mmengine's Runner.save_checkpoint writes, in miniature."""
    buf = HistoryBuffer()
    buf.update(1.5)
    buf.update(2.5)
    return {
        'meta': {
            'epoch': 1,
            'iter': 4,
            'cfg': 'x = 1',
            'seed': 0,
            'dataset_meta': {'classes': ('a', 'b')},
        },
        'state_dict': OrderedDict(w=torch.arange(3.0)),
        'message_hub': {
            'log_scalars': {'train/loss': buf},
            'runtime_info': {
                'eta': np.float64(0.5),
                'arr': np.arange(3, dtype=np.int32),
                'keep_ckpt_ids': [1],
            },
            'resumed_keys': {'eta': True},
        },
        'optimizer': {'state': {}, 'param_groups': [{'lr': 0.1}]},
    }


class _Evil:
    """An arbitrary class a malicious file could pickle."""

    def __init__(self, x=1):
        self.x = x


@needs_allowlist
def test_mmengine_types_load_weights_only(tmp_path):
    path = str(tmp_path / 'ok.pth')
    torch.save(_mmengine_like_checkpoint(), path)
    # Plain torch.load (weights_only=True by default on torch>=2.6) fails:
    with pytest.raises(Exception, match='HistoryBuffer'):
        torch.load(path, weights_only=True)
    ckpt = load_checkpoint_safe(path)
    buf = ckpt['message_hub']['log_scalars']['train/loss']
    assert isinstance(buf, HistoryBuffer)
    assert buf.mean() == pytest.approx(2.0)  # statistics methods restored
    assert buf.current() == pytest.approx(2.5)
    info = ckpt['message_hub']['runtime_info']
    assert info['eta'] == 0.5 and isinstance(info['eta'], np.floating)
    np.testing.assert_array_equal(info['arr'], [0, 1, 2])
    assert info['arr'].dtype == np.int32
    assert torch.equal(ckpt['state_dict']['w'], torch.arange(3.0))
    # mmengine's own entry point (Runner.resume, load_from, Pretrained)
    # goes through the same policy.
    ckpt2 = _load_checkpoint(path, map_location='cpu')
    assert ckpt2['meta']['iter'] == 4


@needs_allowlist
def test_unknown_type_refused_with_opt_in_message(tmp_path, monkeypatch):
    monkeypatch.delenv('MMSSL_TRUST_CHECKPOINT', raising=False)
    path = str(tmp_path / 'evil.pth')
    torch.save({'state_dict': {}, 'args': argparse.Namespace(lr=1)}, path)
    for load in (load_checkpoint_safe, _load_checkpoint, torch_load_safe):
        with pytest.raises(UnsafeCheckpointError) as err:
            load(path)
        msg = str(err.value)
        assert 'argparse.Namespace' in msg
        assert 'MMSSL_TRUST_CHECKPOINT=1' in msg
        assert 'trusted=True' in msg

    # Explicit opt-ins.
    assert load_checkpoint_safe(path, trusted=True)['args'].lr == 1
    with trusted_checkpoints():
        assert _load_checkpoint(path)['args'].lr == 1
    monkeypatch.setenv('MMSSL_TRUST_CHECKPOINT', '1')
    assert _load_checkpoint(path)['args'].lr == 1


@needs_allowlist
def test_getattr_only_serves_history_buffer_methods(tmp_path):
    """The restricted getattr must not hand out arbitrary attributes."""
    import pickle

    class Sneaky:
        def __reduce__(self):
            return getattr, (OrderedDict, 'fromkeys')

    path = str(tmp_path / 'sneaky.pth')
    torch.save({'x': Sneaky()}, path)
    with pytest.raises(pickle.UnpicklingError, match='not allowed'):
        load_checkpoint_safe(path)


@needs_allowlist
def test_add_safe_checkpoint_globals(tmp_path):
    path = str(tmp_path / 'custom.pth')
    torch.save({'obj': _Evil(3)}, path)
    with pytest.raises(UnsafeCheckpointError, match='_Evil'):
        load_checkpoint_safe(path)
    add_safe_checkpoint_globals([_Evil])
    try:
        assert load_checkpoint_safe(path)['obj'].x == 3
    finally:
        _extra_globals.remove(_Evil)


def test_atomic_save_leaves_old_file_on_crash(tmp_path, monkeypatch):
    path = str(tmp_path / 'epoch_1.pth')
    save_checkpoint_atomic({'v': torch.ones(2)}, path)
    real_save = torch.save

    def half_then_die(obj, f, *args, **kwargs):
        f.write(b'PK\x03\x04 partial')
        raise KeyboardInterrupt('killed mid-save')

    monkeypatch.setattr(torch, 'save', half_then_die)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint_atomic({'v': torch.zeros(2)}, path)
    monkeypatch.setattr(torch, 'save', real_save)
    assert os.listdir(tmp_path) == ['epoch_1.pth']  # no temp file left
    assert torch.equal(torch_load_safe(path)['v'], torch.ones(2))


def test_atomic_save_uses_umask_mode(tmp_path):
    path = str(tmp_path / 'm.pth')
    save_checkpoint_atomic({'v': torch.ones(1)}, path)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
