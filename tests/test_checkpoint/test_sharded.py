"""Sharded (DCP) checkpoints: saved by 1 process, resumed by 2 FSDP2 gloo
ranks and saved again, resumed by 1 process: model and AdamW state equal
at every hop; the one-file conversion loads with the safe loader."""

import os
import os.path as osp
import subprocess
import sys

import pytest
import torch

from tests.support.dist import file_init_method, init_gloo, spawn

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
WORLD = 2


def _model_and_optim():
    from mmssl.models.backbones import DINOVisionTransformer

    torch.manual_seed(0)
    model = DINOVisionTransformer(
        arch=dict(
            embed_dims=16, num_layers=2, num_heads=2, feedforward_channels=32
        ),
        img_size=16,
        patch_size=8,
    )
    return model, torch.optim.AdamW(model.parameters(), lr=0.1)


def _step(model, optim):
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    model(x)[0].pow(2).sum().backward()
    optim.step()
    optim.zero_grad()


def _full(state):
    """Plain tensors (DTensors gathered) of a training_state."""

    def walk(value):
        if hasattr(value, 'full_tensor'):
            return value.full_tensor().detach().clone()
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(state)


def _worker(rank, init_method, tmp):
    init_gloo(rank, WORLD, init_method)
    from mmssl.checkpoint import load_sharded, save_sharded, training_state
    from mmssl.models.wrappers import MMFullyShard

    model, _ = _model_and_optim()
    model = MMFullyShard(model).module
    optim = torch.optim.AdamW(model.parameters(), lr=0.1)
    load_sharded(osp.join(tmp, 'ws1'), model, optim)
    full = _full(training_state(model, optim))
    if rank == 0:
        torch.save(full, osp.join(tmp, 'loaded_ws2.pth'))
    _step(model, optim)
    save_sharded(training_state(model, optim), osp.join(tmp, 'ws2'))
    full = _full(training_state(model, optim))
    if rank == 0:
        torch.save(full, osp.join(tmp, 'saved_ws2.pth'))
    torch.distributed.destroy_process_group()


def _assert_equal(a, b, where=''):
    if isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=where)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_equal(a[k], b[k], f'{where}/{k}')
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal(x, y, f'{where}/{i}')
    else:
        assert a == b, where


@pytest.mark.slow
def test_resume_on_other_world_sizes_and_to_file(tmp_path):
    from mmssl.checkpoint import (
        load_sharded,
        save_sharded,
        torch_load_safe,
        training_state,
    )

    tmp = str(tmp_path)
    model, optim = _model_and_optim()
    _step(model, optim)
    saved = _full(training_state(model, optim))
    assert saved['optimizer']['state']  # AdamW moments are in it
    save_sharded(training_state(model, optim), osp.join(tmp, 'ws1'))
    assert not osp.exists(osp.join(tmp, 'ws1.tmp'))
    spawn(_worker, file_init_method(tmp_path), tmp, nprocs=WORLD)
    _assert_equal(torch.load(osp.join(tmp, 'loaded_ws2.pth')), saved, '1->2')
    after = torch.load(osp.join(tmp, 'saved_ws2.pth'))
    fresh, fresh_optim = _model_and_optim()
    load_sharded(osp.join(tmp, 'ws2'), fresh, fresh_optim)
    _assert_equal(_full(training_state(fresh, fresh_optim)), after, '2->1')
    # the step on 2 ranks moved the weights
    assert not torch.equal(
        after['state_dict']['cls_token'], saved['state_dict']['cls_token']
    )

    out = osp.join(tmp, 'one.pth')
    subprocess.run(
        [
            sys.executable,
            osp.join(ROOT, 'tools/model_converters/dcp_to_file.py'),
            osp.join(tmp, 'ws2'),
            out,
        ],
        check=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS='1'),
    )
    one = torch_load_safe(out)
    _assert_equal(one['state_dict'], after['state_dict'], 'file')
    assert (
        one['optimizer']['state'].keys() == after['optimizer']['state'].keys()
    )


def test_incomplete_folder_is_refused(tmp_path):
    from mmssl.checkpoint import load_sharded

    model, optim = _model_and_optim()
    os.makedirs(tmp_path / 'ck.tmp')
    for name in ('ck.tmp', 'missing'):
        with pytest.raises(FileNotFoundError, match='not a complete'):
            load_sharded(str(tmp_path / name), model, optim)


def test_save_again_replaces(tmp_path):
    """A second save under the same name (e.g. a signal checkpoint at the
    step the hook saved) replaces the folder, or a file of that name."""
    from mmssl.checkpoint import (
        load_runner_state,
        load_sharded,
        save_sharded,
        training_state,
    )

    path = str(tmp_path / 'iter_4.pth')
    with open(path, 'wb') as f:
        f.write(b'an ordinary checkpoint file')
    model, optim = _model_and_optim()
    for step in (1, 2):
        _step(model, optim)
        save_sharded(training_state(model, optim), path, dict(step=step))
    expected = _full(training_state(model, optim))
    fresh, fresh_optim = _model_and_optim()
    load_sharded(path, fresh, fresh_optim)
    _assert_equal(_full(training_state(fresh, fresh_optim)), expected)
    assert load_runner_state(path) == dict(step=2)
    assert sorted(os.listdir(tmp_path)) == ['iter_4.pth']
