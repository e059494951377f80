"""``--resume`` and sharded (DCP) checkpoint folders: a complete folder
is a candidate like a file, newest first; an unfinished ``.tmp`` folder,
a folder without DCP's ``.metadata`` and one with a torn runner state are
passed over; an explicit folder is accepted only when complete. The
checkpoint hook's ``sharded`` setting is validated."""

import os
import os.path as osp
import time

import pytest

from mmssl.launch import find_newest_checkpoint, resolve_resume
from mmssl.launch.resume import (
    SHARDED_RUNNER_STATE,
    IncompleteCheckpointWarning,
    checkpoint_problem,
)


def _file(path, mtime):
    import torch

    torch.save({'meta': {}}, path)
    os.utime(path, (mtime, mtime))


def _folder(path, mtime, metadata=True, state=True):
    """A folder laid out as a sharded checkpoint (contents not DCP's)."""
    os.makedirs(path)
    if metadata:
        with open(osp.join(path, '.metadata'), 'wb') as f:
            f.write(b'x')
    if state:
        _file(osp.join(path, SHARDED_RUNNER_STATE), mtime)
    os.utime(path, (mtime, mtime))


def test_newest_complete_folder_is_chosen(tmp_path):
    wd = str(tmp_path)
    now = time.time()
    _file(osp.join(wd, 'iter_2.pth'), now - 10)
    _folder(osp.join(wd, 'iter_4.pth'), now - 5)
    assert find_newest_checkpoint(wd) == osp.join(wd, 'iter_4.pth')
    # newer, but unfinished or torn: passed over, with a warning each
    _folder(osp.join(wd, 'iter_6.pth.tmp'), now)
    _folder(osp.join(wd, 'iter_7.pth'), now, metadata=False)
    _folder(osp.join(wd, 'iter_8.pth'), now, state=False)
    torn = osp.join(wd, 'iter_9.pth')
    _folder(torn, now)
    with open(osp.join(torn, SHARDED_RUNNER_STATE), 'r+b') as f:
        f.truncate(20)
    os.utime(torn, (now, now))
    with pytest.warns(IncompleteCheckpointWarning) as record:
        assert find_newest_checkpoint(wd) == osp.join(wd, 'iter_4.pth')
    reasons = ' '.join(str(w.message) for w in record)
    assert '.metadata' in reasons and SHARDED_RUNNER_STATE in reasons
    assert 'iter_6.pth.tmp' not in reasons  # not even a candidate
    assert 'unfinished' in checkpoint_problem(osp.join(wd, 'iter_6.pth.tmp'))
    # last_checkpoint may name a folder
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(osp.join(wd, 'iter_4.pth'))
    for name in ('iter_7.pth', 'iter_8.pth', 'iter_9.pth'):
        os.utime(osp.join(wd, name), (now - 20, now - 20))
    assert find_newest_checkpoint(wd) == osp.join(wd, 'iter_4.pth')


def test_explicit_folder(tmp_path):
    now = time.time()
    good, bad = str(tmp_path / 'iter_4.pth'), str(tmp_path / 'iter_5.pth')
    _folder(good, now)
    _folder(bad, now, metadata=False)
    assert resolve_resume(good, '/elsewhere')[:2] == (True, good)
    with pytest.raises(FileNotFoundError, match='without DCP .metadata'):
        resolve_resume(bad, '/elsewhere')


def test_hook_sharded_setting_is_checked():
    from mmssl.engine.hooks import AtomicCheckpointHook

    assert AtomicCheckpointHook().sharded == 'auto'
    assert AtomicCheckpointHook(sharded=True).sharded is True
    with pytest.raises(ValueError, match="sharded='yes'"):
        AtomicCheckpointHook(sharded='yes')


def test_slurm_requeue_reads_the_config_of_a_folder(tmp_path):
    """A requeued job compares its config with the one stored in the
    folder's runner state, as with a file."""
    import torch
    from mmengine.config import Config

    from mmssl.engine.resume.options import requeued_resume
    from mmssl.errors import TrainConfigError

    cfg = Config(dict(work_dir=str(tmp_path), model=dict(temperature=0.2)))
    folder = str(tmp_path / 'iter_4.pth')
    _folder(folder, time.time())
    torch.save(
        {'meta': {'cfg': cfg.pretty_text}},
        osp.join(folder, SHARDED_RUNNER_STATE),
    )
    assert requeued_resume(cfg)[:2] == (True, folder)
    cfg.model.temperature = 0.3
    with pytest.raises(TrainConfigError, match='temperature: 0.2 -> 0.3'):
        requeued_resume(cfg)
