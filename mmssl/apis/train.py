"""Preparing a training config, and training it: what tools/train.py does.

``tools/train.py`` only parses its flags and calls :func:`prepare_train_cfg`
and :func:`train`; Python users call the same two functions and get the
same run::

    from mmssl.apis import prepare_train_cfg, train

    notes = []
    cfg = prepare_train_cfg('configs/simclr/..._demo.py', amp=True,
                            auto_scale_lr=True, notes=notes)
    train(cfg, notes)              # or: RUNNERS.build(cfg).train()
"""

import logging
import os
import os.path as osp
from typing import Any, List, Optional, Tuple, Union

from mmengine.config import Config

from mmssl.engine.preflight import build_train_runner, check_val_data
from mmssl.engine.resume.options import set_resume
from mmssl.errors import TrainConfigError

#: ``(logging level, message)`` pairs for the run's log, collected while the
#: config is prepared (the runner and its log file do not exist yet).
Notes = List[Tuple[int, str]]

#: ``--vis NAME`` -> the vis backend added and the package it needs.
VIS_BACKENDS = {
    'tensorboard': ('TensorboardVisBackend', 'tensorboard'),
    'wandb': ('WandbVisBackend', 'wandb'),
}


def prepare_train_cfg(
    config: Union[str, Config],
    *,
    work_dir: Optional[str] = None,
    resume: Union[None, bool, str] = None,
    amp: bool = False,
    auto_scale_lr: Union[None, bool, str] = None,
    seed: Optional[int] = None,
    deterministic: bool = False,
    launcher: str = 'none',
    cfg_options: Optional[dict] = None,
    allow_new_keys: bool = False,
    checkpoint_every_minutes: Optional[float] = None,
    vis: Optional[List[str]] = None,
    max_epochs: Optional[int] = None,
    max_iters: Optional[int] = None,
    notes: Optional[Notes] = None,
) -> Config:
    """Everything ``tools/train.py`` does to a config before the runner.

    Args:
        config (str | Config): Config file or loaded config (changed in
            place).
        work_dir (str, optional): Wins over the config's ``work_dir``;
            without either, ``./work_dirs/<config file stem>``.
        resume (None | bool | str): None: the config's ``resume``;
            True or ``'auto'``: the newest checkpoint of the work dir
            (from scratch when there is none); a path: that checkpoint.
            A requeued SLURM job resumes as with ``'auto'`` when the
            checkpoint's config equals this one.
        amp (bool): Mixed precision (float16 on GPU, bfloat16 on CPU).
        auto_scale_lr (None | bool | str): None: scale only when the
            config sets ``auto_scale_lr.enable``; True: scale by the
            config's ``auto_scale_lr.rule`` (linear when it has none);
            ``'linear'`` or ``'sqrt'``: that rule.
        seed (int, optional): Random seed.
        deterministic (bool): Deterministic algorithms (seed 0 if none).
        launcher (str): ``'none'``, ``'pytorch'``, ``'slurm'`` or
            ``'mpi'``; starts the process group.
        cfg_options (dict, optional): Dotted-key overrides.
        allow_new_keys (bool): Let ``cfg_options`` add keys.
        checkpoint_every_minutes (float, optional): Safety checkpoints.
        vis (list[str], optional): Extra vis backends, ``'tensorboard'``
            and/or ``'wandb'`` (see docs/en/logging.md).
        max_epochs (int, optional): Train this many epochs; schedules
            given as run fractions follow (docs/en/config.md).
        max_iters (int, optional): Train this many iterations (an
            iteration-based loop) instead.
        notes (list, optional): Receives ``(level, message)`` pairs for
            the run's log; pass them to :func:`train`.

    Returns:
        Config: The prepared config; build it with
        ``RUNNERS.build(cfg)`` or :func:`train`.

    Raises:
        TrainConfigError: With a message naming the problem and the fix.
    """
    from mmssl.config.reading import LOAD_ERRORS, load_config
    from mmssl.config.run_length import set_run_length
    from mmssl.engine.runner import setup_distributed_cfg
    from mmssl.engine.runner.console import quiet_known_warnings
    from mmssl.setup_env import register_all_modules

    notes = [] if notes is None else notes
    register_all_modules()
    lines = []
    try:
        cfg = load_config(config, cfg_options, allow_new_keys, notes=lines)
    except LOAD_ERRORS as exc:
        raise TrainConfigError(str(exc)) from exc
    _add(notes, logging.WARNING, lines)
    try:
        length = set_run_length(cfg, max_epochs, max_iters)
    except ValueError as exc:
        raise TrainConfigError(str(exc)) from exc
    if length:
        notes.append((logging.INFO, length))
    _set_work_dir(cfg, work_dir)
    _check_work_dir_free(cfg)
    quiet_known_warnings(0 if launcher == 'none' else None)
    try:
        _, world_size = setup_distributed_cfg(cfg, launcher)
    except RuntimeError as exc:
        raise TrainConfigError(str(exc)) from exc
    if world_size > 1:
        backend = cfg.env_cfg['dist_cfg']['backend']
        notes.append(
            (
                logging.INFO,
                f'distributed: {world_size} processes, backend {backend}, '
                f'launcher {launcher}',
            )
        )
    try:
        if amp:
            import torch

            notes.append((logging.INFO, _amp(cfg, torch.cuda.is_available())))
        _add(notes, logging.INFO, scale_lr(cfg, world_size, auto_scale_lr))
    except ValueError as exc:
        raise TrainConfigError(str(exc)) from exc
    _add(notes, logging.INFO, _set_randomness(cfg, seed, deterministic))
    if checkpoint_every_minutes is not None:
        cfg.checkpoint_every_minutes = checkpoint_every_minutes
    for name in vis or []:
        notes.append((logging.INFO, add_vis_backend(cfg, name)))
    _add(notes, logging.INFO, set_resume(cfg, resume))
    return cfg


def _add(notes: Optional[Notes], level: int, lines: List[str]) -> None:
    if notes is not None:
        notes.extend((level, line) for line in lines)


def _amp(cfg: Config, cuda: bool) -> str:
    from mmssl.config.rewrite import enable_amp_in_cfg

    return enable_amp_in_cfg(cfg, cuda)


def _set_work_dir(cfg: Config, work_dir: Optional[str]) -> None:
    """``work_dir`` > the config's ``work_dir`` > ./work_dirs/<stem>."""
    if work_dir is not None:
        cfg.work_dir = work_dir
    elif cfg.get('work_dir') is None:
        stem = osp.splitext(osp.basename(cfg.filename or 'config'))[0]
        cfg.work_dir = osp.join('./work_dirs', stem)


def _check_work_dir_free(cfg: Config) -> None:
    """Refuse at once when a live run uses the work dir.

    The runner takes the lock itself when training starts.
    """
    from mmssl.launch import RunLock, WorkDirBusyError

    lock_cfg = dict(cfg.get('lock_cfg') or {})
    if lock_cfg.pop('enable', True) is False:
        return
    try:
        RunLock(cfg.work_dir, **lock_cfg).check()
    except WorkDirBusyError as exc:
        raise TrainConfigError(str(exc), exit_code=1) from exc


def scale_lr(
    cfg: Config, world_size: int, rule: Union[None, bool, str] = None
) -> List[str]:
    """Scale the config's lr for the real batch size; say where the rule
    came from.

    Args:
        cfg (Config): Config, changed in place.
        world_size (int): Number of processes.
        rule (None | bool | str): As ``auto_scale_lr`` of
            :func:`prepare_train_cfg`.

    Returns:
        list[str]: Log lines (empty when nothing is scaled).
    """
    from mmssl.config.rewrite import auto_scale_lr_in_cfg

    auto = cfg.get('auto_scale_lr') or {}
    if rule in (None, False) and not auto.get('enable', False):
        return []
    if isinstance(rule, str):
        source = f'the command line (--auto-scale-lr {rule})'
    elif auto.get('rule'):
        rule, source = auto['rule'], "the config's auto_scale_lr.rule"
    else:
        rule = 'linear'
        source = 'the default (the config sets no auto_scale_lr.rule)'
    lines = auto_scale_lr_in_cfg(cfg, world_size, rule)
    lines[0] += f'; rule from {source}'
    return lines


def _set_randomness(
    cfg: Config, seed: Optional[int], deterministic: bool
) -> List[str]:
    lines = []
    randomness = dict(cfg.get('randomness') or {})
    if seed is not None:
        randomness['seed'] = seed
    if deterministic:
        # cuBLAS reads this when its handle is created, i.e. before any
        # CUDA work; nothing has touched CUDA yet.
        os.environ.setdefault('CUBLAS_WORKSPACE_CONFIG', ':4096:8')
        randomness['deterministic'] = True
        if randomness.get('seed') is None:
            randomness['seed'] = 0
            lines.append('--deterministic without a seed: using seed 0')
        cfg.setdefault('env_cfg', {})['cudnn_benchmark'] = False
    cfg.randomness = randomness
    return lines


def add_vis_backend(cfg: Config, name: str) -> str:
    """Add TensorBoard or W&B logging to ``cfg.visualizer``.

    W&B runs offline when ``WANDB_MODE=offline`` is set (wandb's own
    variable); the run is then synced later with ``wandb sync``.

    Raises:
        TrainConfigError: Unknown name, or its package is not installed.
    """
    import importlib.util

    if name not in VIS_BACKENDS:
        raise TrainConfigError(
            f'--vis {name}: choose from {", ".join(VIS_BACKENDS)}.'
        )
    backend, package = VIS_BACKENDS[name]
    if importlib.util.find_spec(package) is None:
        raise TrainConfigError(
            f'--vis {name} needs the {package} package: pip install '
            f'{package} (or pip install -e ".[optional]").'
        )
    visualizer = cfg.setdefault('visualizer', dict(type='UniversalVisualizer'))
    backends = list(visualizer.get('vis_backends') or [])
    if not any(b.get('type') == backend for b in backends):
        backends.append(dict(type=backend))
    visualizer['vis_backends'] = backends
    where = osp.join(cfg.work_dir, '<timestamp>', 'vis_data')
    return f'--vis {name}: {backend} added (writes under {where})'


def train(cfg: Config, notes: Optional[Notes] = None) -> Any:
    """Build the runner for a prepared config and train.

    Returns:
        Runner: The runner, after training.

    Raises:
        TrainConfigError: See :func:`build_train_runner`; also when
            another run holds the work dir (exit code 1) or the
            validation folders do not exist. What the failed start added
            to the work dir is removed (:class:`WorkDirTidy`).
    """
    from mmssl.engine.runner.lifecycle import WorkDirTidy
    from mmssl.launch import WorkDirBusyError

    tidy = WorkDirTidy(cfg.work_dir)
    try:
        runner = build_train_runner(cfg, notes)  # config errors first
        check_val_data(cfg)
        try:
            runner.train()
        except WorkDirBusyError as exc:
            runner.logger.error(str(exc))
            raise TrainConfigError(str(exc), exit_code=1) from exc
    except TrainConfigError:
        tidy.tidy()  # no empty timestamped folders of a run that never ran
        raise
    return runner
