"""SLURM requeue helpers (mmssl/launch/requeue.py), without SLURM."""

import subprocess

from mmssl.launch.requeue import (
    is_requeued_run,
    requeue_slurm_job,
    requeue_wanted,
    slurm_job_id,
)


class _Recorder:
    def __init__(self, returncode=0, stderr=''):
        self.calls = []
        self.returncode = returncode
        self.stderr = stderr

    def __call__(self, cmd, **kwargs):
        self.calls.append((cmd, kwargs))
        return subprocess.CompletedProcess(
            cmd, self.returncode, '', self.stderr
        )


def test_job_id_plain_and_array():
    assert slurm_job_id({}) == ''
    assert slurm_job_id({'SLURM_JOB_ID': '42'}) == '42'
    env = {
        'SLURM_JOB_ID': '57',
        'SLURM_ARRAY_JOB_ID': '50',
        'SLURM_ARRAY_TASK_ID': '7',
    }
    assert slurm_job_id(env) == '50_7'


def test_requeue_wanted_only_in_slurm_and_opt_out():
    assert not requeue_wanted({})
    assert requeue_wanted({'SLURM_JOB_ID': '3'})
    for off in ('0', 'false', 'No', 'off'):
        env = {'SLURM_JOB_ID': '3', 'MMSSL_SLURM_REQUEUE': off}
        assert not requeue_wanted(env)


def test_requeued_run_reads_restart_count():
    assert not is_requeued_run({})
    assert not is_requeued_run({'SLURM_RESTART_COUNT': '0'})
    assert is_requeued_run({'SLURM_RESTART_COUNT': '2'})
    assert not is_requeued_run({'SLURM_RESTART_COUNT': 'x'})


def test_requeue_runs_scontrol_with_the_job_id():
    rec = _Recorder()
    msg = requeue_slurm_job({'SLURM_JOB_ID': '12'}, run=rec)
    assert rec.calls[0][0] == ['scontrol', 'requeue', '12']
    assert rec.calls[0][1]['timeout'] == 60
    assert msg == 'requeued SLURM job 12 (`scontrol requeue 12`)'


def test_requeue_failure_is_reported_not_raised():
    rec = _Recorder(
        1, 'scontrol: error: Requested operation is presently disabled\n'
    )
    msg = requeue_slurm_job({'SLURM_JOB_ID': '12'}, run=rec)
    assert 'failed with status 1' in msg
    assert 'presently disabled' in msg
    assert '--requeue' in msg

    def boom(cmd, **kwargs):
        raise FileNotFoundError('scontrol')

    assert 'failed' in requeue_slurm_job({'SLURM_JOB_ID': '1'}, run=boom)
    assert requeue_slurm_job({}, run=boom).startswith('not a SLURM job')
