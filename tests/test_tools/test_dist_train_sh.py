"""tools/dist_train.sh with two CPU processes (gloo) on the demo config."""

import os
import os.path as osp
import re
import textwrap

import pytest
import torch

from tests.support.dist import run_retrying_port_clash

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEMO = 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py'

# Each rank saves its final weights, to compare ranks after the run.
DUMP_HOOK = textwrap.dedent("""
    import os.path as osp

    import torch
    from mmengine.dist import get_rank
    from mmengine.hooks import Hook
    from mmengine.model import is_model_wrapper

    from mmssl.registry import HOOKS


    @HOOKS.register_module(force=True)
    class DumpRankWeightsHook(Hook):
        priority = 'LOWEST'

        def after_run(self, runner):
            model = runner.model
            if is_model_wrapper(model):
                model = model.module
            path = osp.join(runner.work_dir, f'rank{get_rank()}.pth')
            torch.save(model.state_dict(), path)
""")


@pytest.mark.slow
def test_dist_train_two_cpu_processes(demo_data_root, tmp_path):
    (tmp_path / 'dump_rank_weights.py').write_text(DUMP_HOOK)
    work_dir = tmp_path / 'wd'
    env = dict(os.environ)
    env.update(
        CUDA_VISIBLE_DEVICES='-1',
        OMP_NUM_THREADS='1',
        PYTHONPATH=str(tmp_path),
    )
    env.pop('PORT', None)
    cmd = [
        'bash',
        'tools/dist_train.sh',
        DEMO,
        '2',
        '--work-dir',
        str(work_dir),
        '--cfg-options',
        f'train_dataloader.dataset.data_root={demo_data_root}/train',
        'train_dataloader.dataset.indices=16',
        'train_dataloader.batch_size=4',
        'train_dataloader.num_workers=0',
        'train_dataloader.persistent_workers=False',
        'train_cfg.max_epochs=1',
        "param_scheduler=[dict(type='ConstantLR', factor=1.0, "
        'by_epoch=True, begin=0, end=1)]',
        'val_cfg=None',
        'val_dataloader=None',
        'val_evaluator=None',
        'default_hooks.logger.interval=1',
        "custom_imports=dict(imports=['dump_rank_weights'])",
        "custom_hooks=[dict(type='DumpRankWeightsHook')]",
    ]
    # the script picks a free port, then torchrun binds it: another program
    # may take it in between, so a clash is retried (bounded in total)
    proc = run_retrying_port_clash(cmd, cwd=ROOT, env=env, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    # a free port was picked (PORT unset)
    assert 'master 127.0.0.1:' in log and ':29500' not in log
    # each warning once per job, the known noise not at all
    assert log.count('using gloo (CPU) instead') <= 1
    assert log.count('SyncBatchNorm layers become BatchNorm') <= 1
    for noise in ('found in sys.modules', 'MKL_NUM_THREADS', 'Exp name:'):
        assert noise not in log, noise
    assert '`broadcast_buffers` is deprecated' not in log

    # one work dir, written by rank 0 only: one run folder, one checkpoint
    runs = [p for p in work_dir.iterdir() if p.is_dir()]
    assert len(runs) == 1
    assert (work_dir / 'epoch_1.pth').is_file()
    run_log = next(runs[0].glob('*.log')).read_text()
    assert 'distributed: 2 processes, backend gloo' in run_log
    # 16 images / 2 ranks / batch 4 = 2 iterations, each logged
    assert 'Epoch(train) [1][2/2]' in run_log

    # both ranks finished with identical weights (and BN statistics)
    w0 = torch.load(work_dir / 'rank0.pth')
    w1 = torch.load(work_dir / 'rank1.pth')
    assert w0.keys() == w1.keys()
    for key in w0:
        assert torch.allclose(w0[key].float(), w1[key].float(), atol=1e-6), key
    # and the checkpoint holds those weights
    ckpt = torch.load(work_dir / 'epoch_1.pth', weights_only=False)
    for key in w0:
        assert torch.allclose(
            ckpt['state_dict'][key].float(), w0[key].float(), atol=1e-6
        ), key


#: ``MM/DD HH:MM:SS - mmengine - LEVEL - `` before a logged line.
_LOG_PREFIX = re.compile(r'^\d\d/\d\d \d\d:\d\d:\d\d - mmengine - \w+ - ')


@pytest.mark.slow
def test_dist_train_console_is_quiet_and_says_each_thing_once(
    demo_data_root, tmp_path
):
    """The console of ``bash tools/dist_train.sh CONFIG 1`` as a user
    sees it (threads picked by the tool, 8 workers asked for on a small
    machine): no echoed ``warnings.warn(`` source lines, no DataLoader
    worker warning, no line said twice, the launcher's headline and the
    run's summary once each (issue 40)."""
    work_dir = tmp_path / 'wd'
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='-1')
    for name in ('PORT', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
        env.pop(name, None)
    cmd = [
        'bash', 'tools/dist_train.sh', DEMO, '1', '--work-dir', str(work_dir),
        '--cfg-options',
        f'train_dataloader.dataset.data_root={demo_data_root}/train',
        'train_dataloader.dataset.indices=8',
        'train_dataloader.batch_size=4',
        'train_dataloader.num_workers=8',
        'train_cfg.max_epochs=1',
        'val_cfg=None', 'val_dataloader=None', 'val_evaluator=None',
    ]  # fmt: skip
    proc = run_retrying_port_clash(cmd, cwd=ROOT, env=env, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert 'warnings.warn(' not in log
    assert 'worker processes in total' not in log  # torch's worker warning
    lines = [_LOG_PREFIX.sub('', x) for x in log.splitlines() if x.strip()]
    repeated = {x for x in lines if lines.count(x) > 1}
    assert not repeated, repeated
    for once in ('dist_train: 1 node(s) x 1 process(es)', 'torch threads: ',
                 'run finished: 2 iterations', 'last checkpoint: ',
                 'judge it: '):  # fmt: skip
        assert sum(x.startswith(once) for x in lines) == 1, (once, log)
    assert (work_dir / 'epoch_1.pth').is_file()
