"""A real SLURM job: SIGUSR1, save, requeue, automatic resume.

Starts the one-node test cluster of tests/support/slurm.py, runs
tools/slurm_train.sh with 2 CPU tasks from a batch job submitted with
``--requeue``, sends ``scancel --signal=USR1`` in the middle of training,
and checks that the job saved, requeued itself, resumed without
``--resume`` and ended with the same weights as an uninterrupted job.
"""

import glob
import os
import os.path as osp
import re
import time

import pytest
import torch

from tests.support import slurm as _slurm

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

DEMO = osp.join(ROOT, 'configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py')
EPOCHS = 4
ITERS_PER_EPOCH = 8  # 64 images, 2 ranks x batch 4

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(_slurm.missing_binaries()),
        reason='SLURM is not installed: apt-get install slurm-wlm munge '
        f'(missing {_slurm.missing_binaries()})',
    ),
    pytest.mark.skipif(
        os.geteuid() != 0, reason='the test cluster runs its daemons as root'
    ),
]


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('slurm'))
    cl = _slurm.start_cluster(root)
    yield cl
    _slurm.stop_cluster(cl)


def _options(data_root: str) -> str:
    return ' '.join(
        [
            f'train_dataloader.dataset.data_root={data_root}/train',
            'train_dataloader.dataset.indices=64',
            'train_dataloader.batch_size=4',
            'train_dataloader.num_workers=0',
            'train_dataloader.persistent_workers=False',
            'val_cfg=None',
            'val_dataloader=None',
            'val_evaluator=None',
            'default_hooks.logger.interval=1',
            f'train_cfg.max_epochs={EPOCHS}',
            'randomness.seed=0',
        ]
    )


def _submit(cluster, tmp_path, name, data_root, work_dir) -> str:
    script = tmp_path / f'{name}.sbatch'
    out = tmp_path / f'{name}.%j.out'
    script.write_text(
        '#!/bin/bash\n'
        '#SBATCH --ntasks=2 --cpus-per-task=1\n'
        '#SBATCH --requeue --open-mode=append\n'
        f'#SBATCH --output={out}\n'
        'export OMP_NUM_THREADS=1\n'
        'echo "start restart=${SLURM_RESTART_COUNT:-0}"\n'
        'GPUS=2 GPUS_PER_NODE=0 CPUS_PER_TASK=1 '
        f'bash {ROOT}/tools/slurm_train.sh debug {name} {DEMO} {work_dir} '
        f'--cfg-options {_options(data_root)}\n'
    )
    res = cluster.run('sbatch', '--parsable', str(script))
    return res.stdout.strip().split(';')[0]


def _out_text(tmp_path, name, job) -> str:
    path = tmp_path / f'{name}.{job}.out'
    return path.read_text() if path.exists() else ''


def _final_weights(work_dir: str) -> dict:
    from mmssl.checkpoint import load_checkpoint

    path = osp.join(work_dir, f'epoch_{EPOCHS}.pth')
    assert osp.isfile(path), sorted(os.listdir(work_dir))
    return load_checkpoint(path)['state_dict']


def _wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.3)
    raise TimeoutError(f'timed out after {timeout} s waiting for {what}')


def test_usr1_saves_requeues_and_resumes_exactly(
    cluster, demo_data_root, tmp_path
):
    # Uninterrupted reference job.
    ref_dir = str(tmp_path / 'ref')
    ref = _submit(cluster, tmp_path, 'ref', demo_data_root, ref_dir)
    cluster.wait_state(ref, ('COMPLETED', 'FAILED', 'CANCELLED'), 300)
    text = _out_text(tmp_path, 'ref', ref)
    assert cluster.job_state(ref) == 'COMPLETED', text[-3000:] + cluster.logs()

    # The same job, signalled in epoch 2.
    work_dir = str(tmp_path / 'run')
    job = _submit(cluster, tmp_path, 'run', demo_data_root, work_dir)
    started = re.compile(r'Epoch\(train\)\s+\[2\]\[\s*3/')
    _wait_for(
        lambda: started.search(_out_text(tmp_path, 'run', job)),
        240,
        'epoch 2 of the job to start',
    )
    cluster.run('scancel', '--signal=USR1', job)
    # Requeued jobs wait about 2 minutes before they are eligible again;
    # make it eligible now once it is back in the queue.
    _wait_for(
        lambda: 'requeued SLURM job' in _out_text(tmp_path, 'run', job),
        120,
        'the requeue message',
    )
    cluster.wait_state(job, ('PENDING',), 60)
    # SLURM's own requeue delay (about 2 min) keeps the relaunch well
    # apart from the kill. Forcing it at once failed in CI (job FAILED,
    # no second run in its output). slurmd fails a batch launch while a
    # step of the same job still runs on the node ("already running, do
    # not launch second copy"), and refuses one whose credential is not
    # newer than the job's revocation, in whole seconds ("already killed").
    # Wait until slurmd has torn down both steps of the first run and the
    # node is idle, then let the clock move on.
    _wait_for(
        lambda: (
            cluster.steps_done(job) >= 2 and cluster.node_state() == 'idle'
        ),
        120,
        'the first run of the job to be torn down',
    )
    time.sleep(2)
    cluster.run('scontrol', 'update', f'JobId={job}', 'StartTime=now')
    cluster.wait_state(job, ('COMPLETED', 'FAILED', 'CANCELLED'), 300)
    text = _out_text(tmp_path, 'run', job)
    # once seen FAILED right after the requeue, with no restart in the
    # job output (not reproduced since): the daemons' logs say why
    assert cluster.job_state(job) == 'COMPLETED', text[-3000:] + cluster.logs(
        60
    )

    # One line on the signal, the requeue, then an automatic resume.
    stop = re.search(r'stopped at epoch (\d+), iter (\d+) on SIGUSR1', text)
    assert stop, text[-3000:]
    assert 'start restart=1' in text
    assert re.search(r'resum\w+ from .*iter_\d+\.pth', text), text[-3000:]
    assert not glob.glob(osp.join(work_dir, '*.tmp'))

    got, want = _final_weights(work_dir), _final_weights(ref_dir)
    assert got.keys() == want.keys()
    diffs = {
        k: (got[k].float() - want[k].float()).abs().max().item()
        for k in want
        if want[k].is_floating_point()
    }
    worst = sorted(diffs.items(), key=lambda kv: -kv[1])[:5]
    assert max(diffs.values()) <= 1e-6, worst
    for k in want:
        if not want[k].is_floating_point():
            assert torch.equal(got[k], want[k]), k
