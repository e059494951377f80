"""Atomic saving: a kill during a save never leaves a torn file."""

import os

import pytest
import torch

from mmssl.checkpoint import (
    atomic_write_text,
    save_checkpoint_atomic,
    torch_load_safe,
)


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


def test_atomic_write_text_replaces_whole_file(tmp_path, monkeypatch):
    path = str(tmp_path / 'last_checkpoint')
    atomic_write_text('/a/epoch_1.pth', path)
    atomic_write_text('/a/epoch_2.pth', path)
    assert open(path).read() == '/a/epoch_2.pth'

    def fail(*args):
        raise OSError('disk full')

    monkeypatch.setattr(os, 'replace', fail)
    with pytest.raises(OSError, match='disk full'):
        atomic_write_text('/a/epoch_3.pth', path)
    assert open(path).read() == '/a/epoch_2.pth'
    assert os.listdir(tmp_path) == ['last_checkpoint']


def test_atomic_save_uses_umask_mode(tmp_path):
    path = str(tmp_path / 'm.pth')
    save_checkpoint_atomic({'v': torch.ones(1)}, path)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask
