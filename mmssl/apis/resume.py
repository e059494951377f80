"""Resuming: ``--resume [CKPT]`` and the automatic resume of a requeued
SLURM job."""

import os.path as osp
from typing import List, Optional, Tuple, Union

from mmengine.config import Config

from .errors import TrainConfigError


def set_resume(cfg: Config, resume: Union[None, bool, str]) -> List[str]:
    """Set ``cfg.resume`` / ``cfg.load_from`` for a ``resume`` option.

    Args:
        cfg (Config): Config with its ``work_dir``, changed in place.
        resume (None | bool | str): As in
            :func:`mmssl.apis.prepare_train_cfg`.

    Returns:
        list[str]: A log line saying what is resumed, if anything.

    Raises:
        TrainConfigError: A named checkpoint is missing, or a requeued
            job's checkpoint was written by another config.
    """
    from mmssl.launch import resolve_resume
    from mmssl.launch.requeue import is_requeued_run

    if resume is True:
        resume = 'auto'
    elif resume is False:
        resume = None
    try:
        done, ckpt, message = resolve_resume(resume, cfg.work_dir)
    except FileNotFoundError as exc:
        raise TrainConfigError(str(exc)) from exc
    if resume is None and is_requeued_run():
        done, ckpt, message = requeued_resume(cfg)
        resume = 'auto'
    if resume is None:
        return []
    cfg.resume = done
    if done:
        cfg.load_from = ckpt
    return [message]


def requeued_resume(cfg: Config) -> Tuple[bool, Optional[str], str]:
    """``(resume, checkpoint, message)`` for a SLURM job after a requeue.

    The newest checkpoint of the work dir is resumed without ``--resume``
    when the config stored in it equals this run's config.

    Raises:
        TrainConfigError: The checkpoint was written by another config;
            the message names the keys that differ.
    """
    from mmssl.checkpoint import load_checkpoint, load_runner_state
    from mmssl.config.diff import config_differences
    from mmssl.launch import find_newest_checkpoint

    ckpt = find_newest_checkpoint(cfg.work_dir)
    if ckpt is None:
        return (
            False,
            None,
            'SLURM requeue: no checkpoint in the work dir yet; training '
            'starts from scratch.',
        )
    trusted = True if cfg.get('trust_checkpoint', False) else None
    if osp.isdir(ckpt):  # sharded: the meta is in its runner state
        state = load_runner_state(ckpt, trusted=trusted)
    else:
        state = load_checkpoint(ckpt, trusted=trusted)
    meta = state.get('meta') or {}
    saved = meta.get('cfg')
    if saved:
        diffs = config_differences(saved, cfg)
    else:
        diffs = ['the checkpoint stores no config']
    if diffs:
        raise TrainConfigError(
            f'SLURM requeue: {ckpt} was written by a different config '
            f'({"; ".join(diffs)}), so it is not resumed. Use the '
            'config it was trained with, pass --resume CHECKPOINT to '
            'continue from it anyway, or give this run a new --work-dir.'
        )
    return True, ckpt, f'SLURM requeue: resuming from {ckpt}'
