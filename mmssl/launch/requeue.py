"""SLURM preemption: requeue the job after a signal save, resume after.

A batch job started with ``#SBATCH --requeue`` and
``#SBATCH --signal=USR1@120`` gets SIGUSR1 two minutes before its time
limit. mmssl's runner saves a checkpoint at the next iteration boundary,
then (rank 0) calls :func:`requeue_slurm_job`, which runs
``scontrol requeue $SLURM_JOB_ID``. SLURM puts the job back in the queue
with ``SLURM_RESTART_COUNT`` incremented; when it starts again,
``tools/train.py`` sees :func:`is_requeued_run` and resumes from the newest
checkpoint of its work dir without ``--resume``, provided the checkpoint
was written by the same config.

Standard library only.
"""

import os
import subprocess
from typing import Callable, Mapping, Optional

#: Set to ``0`` to save on the signal but not requeue.
REQUEUE_ENV = 'MMSSL_SLURM_REQUEUE'
_FALSE = ('0', 'false', 'no', 'off')


def slurm_job_id(environ: Optional[Mapping[str, str]] = None) -> str:
    """The SLURM job id, or ``''`` outside SLURM.

    For array jobs the id of the array task (``SLURM_ARRAY_JOB_ID`` +
    ``_`` + ``SLURM_ARRAY_TASK_ID``) is what ``scontrol requeue`` takes.
    """
    env = os.environ if environ is None else environ
    array_id = env.get('SLURM_ARRAY_JOB_ID', '')
    task_id = env.get('SLURM_ARRAY_TASK_ID', '')
    if array_id and task_id:
        return f'{array_id}_{task_id}'
    return env.get('SLURM_JOB_ID', '')


def requeue_wanted(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a signal save should requeue the job.

    True inside a SLURM job unless ``MMSSL_SLURM_REQUEUE=0``.
    """
    env = os.environ if environ is None else environ
    if not slurm_job_id(env):
        return False
    return env.get(REQUEUE_ENV, '1').strip().lower() not in _FALSE


def is_requeued_run(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether this is a SLURM job started again after a requeue."""
    env = os.environ if environ is None else environ
    try:
        return int(env.get('SLURM_RESTART_COUNT', '0') or 0) > 0
    except ValueError:
        return False


def requeue_slurm_job(
    environ: Optional[Mapping[str, str]] = None,
    run: Callable = subprocess.run,
    timeout: float = 60,
) -> str:
    """Run ``scontrol requeue <job id>``; return a one-line report.

    Never raises: a failed requeue is reported (the checkpoint is already
    saved, so ``--resume`` by hand still works).

    Args:
        environ (Mapping, optional): Environment; defaults to os.environ.
        run (Callable): ``subprocess.run`` or a stand-in for tests.
        timeout (float): Seconds to wait for scontrol. Defaults to 60.

    Returns:
        str: What happened, for the log.
    """
    job = slurm_job_id(environ)
    if not job:
        return 'not a SLURM job: nothing to requeue'
    cmd = ['scontrol', 'requeue', job]
    try:
        out = run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        return f'`{" ".join(cmd)}` failed: {exc}'
    if out.returncode != 0:
        said = (out.stderr or out.stdout or '').strip().splitlines()
        hint = (
            ' (is the job a batch job submitted with --requeue?)'
            if said
            else ''
        )
        return (
            f'`{" ".join(cmd)}` failed with status {out.returncode}: '
            f'{said[-1] if said else "no output"}{hint}'
        )
    return f'requeued SLURM job {job} (`{" ".join(cmd)}`)'
