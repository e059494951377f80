"""Resuming: ``--resume [CKPT]`` and the automatic resume of a requeued
SLURM job."""

import os.path as osp
from typing import Any, List, Optional, Tuple, Union

from mmengine.config import Config

from mmssl.errors import TrainConfigError


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
    if resume not in (None, 'auto'):
        _refuse_incomplete(resume, cfg.work_dir)
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


def _refuse_incomplete(path: str, work_dir: str) -> None:
    """Refuse a ``--resume PATH`` file that was cut short or garbled.

    Raises:
        TrainConfigError: Naming the problem, the newest complete
            checkpoint of the work dir (or the file's folder) and the flag
            that takes it.
    """
    import warnings

    from mmssl.launch import checkpoint_problem, find_newest_checkpoint

    if not osp.isfile(path):
        return  # sharded folders are checked by resolve_resume
    problem = checkpoint_problem(path, check_crc=False)
    if problem is None:
        return
    newest = None
    with warnings.catch_warnings():  # the skipped files are not news here
        warnings.simplefilter('ignore')
        for folder in dict.fromkeys([work_dir, osp.dirname(path) or '.']):
            if osp.isdir(folder):
                newest = find_newest_checkpoint(folder, check_crc=False)
            if newest:
                break
    if newest:
        hint = f'the newest complete checkpoint is {newest}: --resume {newest}'
        if osp.abspath(osp.dirname(newest)) == osp.abspath(work_dir):
            hint += ' (or --resume without a value, which takes it)'
    else:
        hint = 'no complete checkpoint found next to it; train from scratch'
    raise TrainConfigError(f'--resume {path}: {problem}; {hint}.')


def check_resume_fits(runner: Any) -> None:
    """Refuse to resume from a checkpoint of another model.

    mmengine resumes without ``strict``: a checkpoint of another model
    loads none of its weights (a warning) and fails later in the
    optimizer's state with a traceback. When fewer than half of the
    model's parameters and buffers match the checkpoint in name and
    shape, stop before that, with one line.

    Raises:
        TrainConfigError: Naming the checkpoint, the count matched and
            what to use instead.
    """
    from mmengine.model import is_model_wrapper

    cfg = runner.cfg
    path = cfg.get('load_from')
    if not cfg.get('resume') or not path or not osp.isfile(path):
        return
    try:
        import torch

        ckpt = torch.load(
            path, map_location='cpu', mmap=True, weights_only=True
        )
    except Exception:  # other layouts and pickles: the loader decides
        return
    state = ckpt.get('state_dict', ckpt) if isinstance(ckpt, dict) else None
    if not isinstance(state, dict):
        return
    model = (
        runner.model.module
        if is_model_wrapper(runner.model)
        else (runner.model)
    )
    own = model.state_dict()
    matched = sum(
        1
        for key, value in own.items()
        if getattr(state.get(key), 'shape', None) == value.shape
    )
    if own and 2 * matched < len(own):
        raise TrainConfigError(
            f'--resume {path}: a checkpoint of another model ({matched} of '
            f'{len(own)} parameters and buffers of {type(model).__name__} '
            'match it in name and shape). Resume from a checkpoint of this '
            'config; to start from other weights use model.warm_start '
            '(docs/en/warm_start.md) or load_from=PATH without --resume.'
        )
