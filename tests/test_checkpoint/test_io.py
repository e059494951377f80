"""Atomic saving: a kill during a save never leaves a torn file."""

import os

import mmengine.runner.checkpoint as mme_checkpoint
import pytest
import torch

from mmssl.checkpoint import (
    TRUST_ENV,
    UnsafeCheckpointError,
    atomic_destination,
    atomic_write_text,
    load_checkpoint,
    save_checkpoint_atomic,
    torch_load_safe,
)

from .payload import save_payload_checkpoint


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


def test_temporary_file_is_hidden_in_the_destination_folder(
    tmp_path, monkeypatch
):
    """Same folder (so os.replace is a rename), a name without .pth."""
    folder = tmp_path / 'new' / 'dir'  # created on the way
    seen, real_save = [], torch.save

    def spy(obj, f, *args, **kwargs):
        seen.extend(os.listdir(folder))
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, 'save', spy)
    save_checkpoint_atomic({'v': torch.ones(1)}, str(folder / 'm.pth'))
    assert len(seen) == 1, seen
    assert seen[0].startswith('.m.pth.') and seen[0].endswith('.tmp')
    assert os.listdir(folder) == ['m.pth']


def test_failed_cleanup_keeps_the_original_error(tmp_path, monkeypatch):
    def killed(*args, **kwargs):
        raise KeyboardInterrupt('killed mid-save')

    def cannot_remove(path):
        raise PermissionError(f'cannot remove {path}')

    monkeypatch.setattr(torch, 'save', killed)
    monkeypatch.setattr(os, 'remove', cannot_remove)
    with pytest.raises(KeyboardInterrupt, match='killed mid-save'):
        save_checkpoint_atomic({'v': torch.ones(1)}, str(tmp_path / 'm.pth'))
    assert not (tmp_path / 'm.pth').exists()


def test_atomic_destination_syncs_the_data_before_the_rename(
    tmp_path, monkeypatch
):
    """For writers that take a path (the runner's mmengine save)."""
    path = tmp_path / 'iter_4.pth'
    path.write_bytes(b'old')
    events, real_fsync, real_replace = [], os.fsync, os.replace

    def fsync(fd):
        events.append(
            ('fsync', os.path.basename(os.readlink(f'/proc/self/fd/{fd}')))
        )
        real_fsync(fd)

    def replace(src, dst):
        events.append(('replace', os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, 'fsync', fsync)
    monkeypatch.setattr(os, 'replace', replace)
    with atomic_destination(str(path)) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)
        with open(tmp, 'wb') as f:
            f.write(b'new')
        assert path.read_bytes() == b'old'  # nothing visible before the end
    assert path.read_bytes() == b'new'
    names = [name for kind, name in events if kind == 'fsync']
    assert events.index(('replace', 'iter_4.pth')) > 0
    assert names[0] == os.path.basename(tmp)  # the data, before the rename
    assert events[-1][0] == 'fsync'  # then the folder entry
    assert os.listdir(tmp_path) == ['iter_4.pth']


def test_load_checkpoint_path_map_location_and_log(tmp_path, monkeypatch):
    path = tmp_path / 'c.pth'
    torch.save({'w': torch.ones(2)}, path)
    monkeypatch.setenv('HOME', str(tmp_path))
    logged = []
    monkeypatch.setattr(
        mme_checkpoint,
        'print_log',
        lambda msg, logger=None, **kw: logged.append((msg, logger)),
    )
    assert load_checkpoint('~/c.pth', map_location='meta')['w'].is_meta
    # expanded by mmssl, logged to the current (run's) logger
    expected = f'Loads checkpoint by local backend from path: {path}'
    assert logged == [(expected, 'current')]
    assert torch_load_safe(str(path), map_location='meta')['w'].is_meta
    missing = str(tmp_path / 'missing.pth')
    with pytest.raises(FileNotFoundError) as err:
        load_checkpoint(missing)
    assert str(err.value) == f'checkpoint {missing} does not exist.'


def test_refusals_name_their_source_and_explicit_trust_wins(
    tmp_path, monkeypatch
):
    marker = tmp_path / 'pwned'
    path = save_payload_checkpoint(tmp_path / 'evil.pth', marker)

    def from_file():
        with open(path, 'rb') as f:
            return torch_load_safe(f)

    for load, source in (
        (lambda: load_checkpoint(path), path),
        (lambda: torch_load_safe(path), path),
        (from_file, '<buffer>'),
        (lambda: torch_load_safe(path, source='run/e.pth'), 'run/e.pth'),
    ):
        with pytest.raises(UnsafeCheckpointError) as err:
            load()
        assert err.value.source == source
        assert err.value.refused == 'posix.system'
        assert str(err.value).startswith(
            f'Refusing to load checkpoint {source}: it pickles posix.system,'
        )
    monkeypatch.setenv(TRUST_ENV, '1')
    with pytest.raises(UnsafeCheckpointError):
        torch_load_safe(path, trusted=False)  # explicit beats the variable
    assert not marker.exists()
    monkeypatch.delenv(TRUST_ENV)
    assert torch.equal(
        torch_load_safe(path, trusted=True)['state_dict']['w'],
        torch.arange(3.0),
    )
    assert marker.exists()
