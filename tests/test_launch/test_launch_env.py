"""SLURM/MPI/torchrun variables, backend choice, ports, resume, data size."""

import os
import os.path as osp
import socket
import subprocess
import sys
import time

import pytest

from mmssl.engine.preflight import (
    TooFewSamplesError,
    check_train_dataloader,
    iterations_per_epoch,
)
from mmssl.engine.runner import cpu_model_wrapper_cfg
from mmssl.launch import (
    choose_backend,
    dist_env,
    find_free_port,
    find_newest_checkpoint,
    is_port_free,
    mpi_dist_env,
    parse_slurm_nodelist,
    resolve_resume,
    slurm_dist_env,
    slurm_master_port,
)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@pytest.mark.parametrize(
    'nodelist, hosts',
    [
        ('node01', ['node01']),
        ('node[01-03,07]', ['node01', 'node02', 'node03', 'node07']),
        ('node[8-11]', ['node8', 'node9', 'node10', 'node11']),
        ('a1,b[2-3],c', ['a1', 'b2', 'b3', 'c']),
        ('gpu-[1-2]-ib', ['gpu-1-ib', 'gpu-2-ib']),
        ('r[1-2]n[1,3]', ['r1n1', 'r1n3', 'r2n1', 'r2n3']),
        ('x[098-101]', ['x098', 'x099', 'x100', 'x101']),
    ],
)
def test_parse_slurm_nodelist(nodelist, hosts):
    assert parse_slurm_nodelist(nodelist) == hosts


@pytest.mark.parametrize('bad', ['node[01-03', 'node]1[', 'n[3-1]', ''])
def test_parse_slurm_nodelist_errors(bad):
    with pytest.raises(ValueError):
        parse_slurm_nodelist(bad)


def _slurm(**extra):
    env = dict(
        SLURM_PROCID='5',
        SLURM_NTASKS='8',
        SLURM_LOCALID='1',
        SLURM_NODELIST='node[07-10]',
        SLURM_JOB_ID='123456',
    )
    env.update(extra)
    return env


def test_slurm_dist_env(monkeypatch):
    env = slurm_dist_env(_slurm())
    assert env == dict(
        RANK='5',
        WORLD_SIZE='8',
        LOCAL_RANK='1',
        MASTER_ADDR='node07',
        MASTER_PORT=str(15000 + 123456 % 20000),
    )
    # the step's node list wins over the job's
    env = slurm_dist_env(_slurm(SLURM_STEP_NODELIST='node[09-10]'))
    assert env['MASTER_ADDR'] == 'node09'
    # user-given address and port win
    env = slurm_dist_env(_slurm(MASTER_ADDR='10.0.0.1', PORT='29999'))
    assert env['MASTER_ADDR'] == '10.0.0.1' and env['MASTER_PORT'] == '29999'
    # also through os.environ + dist_env
    for key in list(os.environ):
        if key.startswith('SLURM_') or key in ('MASTER_PORT', 'PORT'):
            monkeypatch.delenv(key)
    for key, value in _slurm(MASTER_PORT='23456').items():
        monkeypatch.setenv(key, value)
    assert dist_env('slurm', os.environ)['MASTER_PORT'] == '23456'


def test_slurm_ports_differ_per_job():
    ports = {
        slurm_master_port({'SLURM_JOB_ID': str(i)}) for i in range(100, 110)
    }
    assert len(ports) == 10 and all(1024 < p < 65536 for p in ports)
    assert slurm_master_port({}) == 29500


def test_slurm_missing_variables():
    with pytest.raises(RuntimeError, match='srun'):
        slurm_dist_env({'SLURM_NTASKS': '2'})


def test_mpi_dist_env():
    env = mpi_dist_env(
        {
            'OMPI_COMM_WORLD_RANK': '3',
            'OMPI_COMM_WORLD_SIZE': '4',
            'OMPI_COMM_WORLD_LOCAL_RANK': '1',
        }
    )
    assert env == dict(
        RANK='3',
        WORLD_SIZE='4',
        LOCAL_RANK='1',
        MASTER_ADDR='127.0.0.1',
        MASTER_PORT='29500',
    )
    env = mpi_dist_env(
        {
            'PMI_RANK': '0',
            'PMI_SIZE': '2',
            'MASTER_ADDR': 'h',
            'MASTER_PORT': '1234',
        }
    )
    assert env['WORLD_SIZE'] == '2' and env['MASTER_PORT'] == '1234'
    with pytest.raises(RuntimeError, match='mpirun'):
        mpi_dist_env({})


def test_torchrun_env():
    env = dict(
        RANK='1',
        WORLD_SIZE='2',
        LOCAL_RANK='1',
        MASTER_ADDR='127.0.0.1',
        MASTER_PORT='29500',
        OTHER='x',
    )
    assert dist_env('pytorch', env)['RANK'] == '1'
    del env['MASTER_PORT']
    with pytest.raises(RuntimeError, match='MASTER_PORT.*dist_train.sh'):
        dist_env('pytorch', env)
    with pytest.raises(ValueError, match='Unknown launcher'):
        dist_env('ssh', env)


def test_choose_backend():
    assert choose_backend('nccl', True) == 'nccl'
    with pytest.warns(UserWarning, match='gloo'):
        assert choose_backend('nccl', False) == 'gloo'
    assert choose_backend('gloo', True) == 'gloo'
    assert choose_backend(None, True) == 'nccl'
    assert choose_backend(None, False) == 'gloo'


def test_cpu_model_wrapper_cfg():
    cfg = cpu_model_wrapper_cfg(None, find_unused_parameters=True)
    assert cfg['type'] == 'MMDistributedDataParallel'
    assert cfg['device_ids'] is None and cfg['find_unused_parameters']
    cfg = cpu_model_wrapper_cfg(
        dict(type='MMDistributedDataParallel', device_ids=[0])
    )
    assert cfg['device_ids'] is None
    fsdp = dict(type='MMFullyShardedDataParallel')
    assert 'device_ids' not in cpu_model_wrapper_cfg(fsdp)


def test_free_port():
    port = find_free_port()
    assert is_port_free(port)
    with socket.socket() as sock:
        sock.bind(('', port))
        sock.listen()
        assert not is_port_free(port)
        assert find_free_port() != port
    # the shell scripts run `python -m mmssl.launch.ports`
    out = subprocess.run(
        [sys.executable, '-m', 'mmssl.launch.ports'],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=60,
    )
    assert 1024 < int(out.stdout) < 65536


def test_launch_imports_without_torch():
    """mmssl.launch is standard library only (the shell scripts use it)."""
    code = (
        'import sys, mmssl.launch, mmssl.launch.ports;'
        "bad = sorted(m for m in ('torch', 'mmengine', 'numpy') "
        'if m in sys.modules);'
        'assert not bad, bad'
    )
    subprocess.run(
        [sys.executable, '-c', code], check=True, cwd=ROOT, timeout=60
    )


def _touch(path, mtime):
    """A small but complete torch checkpoint with the given mtime."""
    import torch

    torch.save({'meta': {}, 'w': torch.arange(4)}, path)
    os.utime(path, (mtime, mtime))


def test_find_newest_checkpoint(tmp_path):
    wd = str(tmp_path)
    assert find_newest_checkpoint(wd) is None
    now = time.time()
    _touch(osp.join(wd, 'epoch_2.pth'), now - 10)
    _touch(osp.join(wd, 'epoch_10.pth'), now - 5)
    _touch(osp.join(wd, 'best.pth'), now)
    assert find_newest_checkpoint(wd) == osp.join(wd, 'epoch_10.pth')
    # last_checkpoint's file is a candidate like the others: the newest
    # complete file wins (a kill between saving and updating the pointer
    # leaves the pointer one save behind)
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(osp.join(wd, 'epoch_2.pth'))
    assert find_newest_checkpoint(wd) == osp.join(wd, 'epoch_10.pth')
    # it wins a tie, also when the work dir moved (same file name)
    os.utime(osp.join(wd, 'epoch_2.pth'), (now - 5, now - 5))
    assert find_newest_checkpoint(wd) == osp.join(wd, 'epoch_2.pth')
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write('/old/place/epoch_2.pth')
    assert find_newest_checkpoint(wd) == osp.join(wd, 'epoch_2.pth')
    # a pointer to nothing is ignored
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write('/old/place/epoch_99.pth')
    assert find_newest_checkpoint(wd) == osp.join(wd, 'epoch_10.pth')
    # a checkpoint saved to another out_dir, named by the pointer
    other = tmp_path / 'elsewhere'
    other.mkdir()
    _touch(str(other / 'iter_7.pth'), now - 1)
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(str(other / 'iter_7.pth'))
    assert find_newest_checkpoint(wd) == str(other / 'iter_7.pth')


def test_resolve_resume(tmp_path):
    wd = str(tmp_path)
    assert resolve_resume(None, wd) == (False, None, '')
    resume, ckpt, msg = resolve_resume('auto', wd)
    assert (resume, ckpt) == (False, None)
    assert 'starts from scratch' in msg and wd in msg
    path = osp.join(wd, 'iter_5.pth')
    _touch(path, time.time())
    assert resolve_resume('auto', wd)[:2] == (True, path)
    assert resolve_resume(path, '/elsewhere')[:2] == (True, path)
    with pytest.raises(FileNotFoundError, match='nothere.pth'):
        resolve_resume(osp.join(wd, 'nothere.pth'), wd)


@pytest.mark.parametrize(
    'n, world, batch, drop_last, iters',
    [
        (100, 1, 10, True, 10),
        (100, 2, 10, True, 5),
        (100, 3, 16, True, 2),  # 34 per rank
        (100, 3, 16, False, 3),
        (10, 2, 8, True, 0),
        (10, 2, 8, False, 1),
        (0, 1, 1, False, 0),
    ],
)
def test_iterations_per_epoch(n, world, batch, drop_last, iters):
    assert iterations_per_epoch(n, world, batch, drop_last) == iters


def _loader(n, batch, drop_last, world=1, monkeypatch=None, infinite=False):
    import mmengine.dataset.sampler as sampler_module
    import torch
    from mmengine.dataset import DefaultSampler, InfiniteSampler
    from torch.utils.data import DataLoader, TensorDataset

    monkeypatch.setattr(sampler_module, 'get_dist_info', lambda: (0, world))
    monkeypatch.setattr(sampler_module, 'sync_random_seed', lambda: 0)
    dataset = TensorDataset(torch.arange(n))
    cls = InfiniteSampler if infinite else DefaultSampler
    sampler = cls(dataset, shuffle=False)
    return DataLoader(
        dataset, batch_size=batch, sampler=sampler, drop_last=drop_last
    )


def test_check_train_dataloader(monkeypatch):
    mp = monkeypatch
    assert check_train_dataloader(_loader(20, 4, True, 2, mp), 2) == 2
    with pytest.raises(TooFewSamplesError) as info:
        check_train_dataloader(_loader(12, 8, True, 2, mp), world_size=2)
    msg = str(info.value)
    for part in (
        '12 samples',
        'world size 2',
        '6 per rank',
        'batch_size=8',
        'drop_last=True',
        '0 iterations',
        'train_dataloader.batch_size=6',
    ):
        assert part in msg
    # without drop_last the short batch is used
    assert check_train_dataloader(_loader(12, 8, False, 2, mp), 2) == 1
    with pytest.raises(TooFewSamplesError, match='empty'):
        check_train_dataloader(_loader(0, 8, False, 1, mp), world_size=1)
    # an infinite sampler (iteration-based loops) fills batches anyway
    loader = _loader(12, 8, True, 2, mp, infinite=True)
    assert check_train_dataloader(loader, 2) == 1
