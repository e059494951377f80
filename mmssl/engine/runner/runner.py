"""mmssl's registered Runner (``runner_type = 'SSLRunner'``).

Everything mmssl changes about how a run is built, saved, loaded and
stopped lives here, in one class a config selects, instead of in patches
applied to mmengine at import time. ``Runner.from_cfg``-style use from
Python (``RUNNERS.build(cfg)`` or ``SSLRunner.from_cfg(cfg)``) and
``tools/train.py`` therefore build the same runner with the same hooks.
"""

import contextlib
import copy
import os
import os.path as osp
import warnings
from typing import Any, Dict, List, Optional, Union

import torch
from mmengine.dist import broadcast_object_list, get_rank, is_main_process
from mmengine.fileio import LocalBackend, get_file_backend
from mmengine.model import is_model_wrapper, revert_sync_batchnorm
from mmengine.runner import Runner
from torch import nn

from mmssl.checkpoint import loading_policy
from mmssl.checkpoint.warm_start import (
    SCHEDULE_KEYS as WARM_START_SCHEDULE_KEYS,
)
from mmssl.datasets.worker_seed import seed_worker
from mmssl.engine.optimizers.cpu_amp_optim_wrapper import amp_on_cpu
from mmssl.launch.lock import RunLock, WorkDirBusyError
from mmssl.launch.requeue import requeue_slurm_job, requeue_wanted
from mmssl.launch.signals import DEFAULT_SIGNALS, StopSignals
from mmssl.models.utils.derived_sizes import resolve_model_sizes
from mmssl.registry import RUNNERS
from mmssl.utils.config_keys import check_top_level_keys

from .console import shorten_console, warnings_on_rank_zero_only
from .distributed import cpu_model_wrapper_cfg
from .loops import resumable_loop_cfg
from .rank_buffers import (
    RANK_BUFFERS_KEY,
    gather_rank_buffers,
    restore_rank_buffers,
)
from .run_length import resolve_run_fractions
from .scheduler_steps import schedulers_for_run
from .sharded_checkpoints import (
    load_sharded_weights,
    resume_sharded,
    save_sharded_checkpoint,
    sharded_checkpoints_wanted,
)

LOOP_STATE_KEY = 'loop_state'


def _has_sync_bn(model: nn.Module) -> bool:
    return any('SyncBatchNorm' in type(m).__name__ for m in model.modules())


def _own_wrapper(model_wrapper_cfg: Optional[Dict]) -> bool:
    """Whether the wrapper type is one that only mmssl registers."""
    from mmssl.registry import MODEL_WRAPPERS

    wrapper = (model_wrapper_cfg or {}).get('type')
    return isinstance(wrapper, str) and wrapper in MODEL_WRAPPERS.module_dict


def _hook_type(hook: Any) -> Optional[str]:
    if isinstance(hook, dict):
        kind = hook.get('type')
        return kind if isinstance(kind, str) else getattr(kind, '__name__')
    return type(hook).__name__


def _fsync_file_and_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        dir_fd = os.open(osp.dirname(osp.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def unique_timestamp(stamp: str) -> str:
    """``stamp``, or ``stamp_N`` when a logger of this process ends with it."""
    from mmengine.logging import MMLogger

    taken = list(MMLogger._instance_dict)
    unique, n = stamp, 0
    while any(name == unique or name.endswith(f'_{unique}') for name in taken):
        n += 1
        unique = f'{stamp}_{n}'
    return unique


@RUNNERS.register_module()
class SSLRunner(Runner):
    """:class:`mmengine.runner.Runner` with mmssl's run-time behaviour.

    Differences from ``Runner`` (all chosen by ``runner_type`` in the
    config, none patched into mmengine):

    * **CPU DDP.** In a distributed run without CUDA, DDP refuses
      ``device_ids`` and SyncBatchNorm; the model is wrapped with
      ``device_ids=None`` and SyncBN turned into BN (with a warning), so a
      GPU config can be debugged with CPU processes unchanged.
    * **Default hooks.** :class:`~mmssl.engine.hooks.DistLossAverageHook`
      (log the mean loss over ranks) and
      :class:`~.preemption.PreemptionHook` are added unless the config has
      them; in a distributed run ``SyncBuffersHook`` too.
    * **Worker seeding.** Data-loader workers are seeded with
      :func:`mmssl.datasets.worker_seed.seed_worker` (fresh augmentations
      every epoch) unless the dataloader config names a
      ``worker_init_fn``.
    * **Checkpoints.** Saves are atomic (temporary file in the same
      folder, fsync, ``os.replace``); a train loop with ``state_dict``
      has it saved under ``checkpoint['loop_state']`` and restored by
      :meth:`resume`. Every load (``load_from``, ``resume``, ``init_cfg``
      Pretrained) runs inside :func:`mmssl.checkpoint.loading_policy`,
      trusted when the config sets ``trust_checkpoint = True``. With FSDP2
      (or ``default_hooks.checkpoint.sharded=True``) checkpoints are
      sharded DCP folders that resume on any world size
      (:mod:`.sharded_checkpoints`).
    * **Signals.** During :meth:`train`, the signals of
      ``signal_cfg.signals`` (default SIGTERM, SIGUSR1, SIGINT) only set a
      flag; at the next iteration boundary all ranks agree, save a
      checkpoint and stop (:class:`~.preemption.PreemptionHook`), and
      ``train()`` raises :class:`~.preemption.TrainingStopped` (a
      ``SystemExit`` with status ``128 + signum`` unless
      ``signal_cfg.exit_code`` says otherwise).
      ``checkpoint_every_minutes = N`` adds a safety checkpoint every N
      minutes.
    * **Every rank's buffers** (per-rank BatchNorm statistics) travel in
      the checkpoint and come back to their rank on resume
      (:mod:`.rank_buffers`).
    * **One run per work dir.** Rank 0 holds ``mmssl-run.lock`` in the
      work dir while training (:mod:`mmssl.launch.lock`); a second run
      there raises :class:`~mmssl.launch.lock.WorkDirBusyError`.
    * **Config checks and derived values** (:meth:`from_cfg`): an unknown
      top-level key is an error (:mod:`mmssl.utils.config_keys`); run
      fractions such as ``end='10%'`` become epochs or iterations of
      this run (:mod:`.run_length`); ``'auto'`` neck/head sizes follow
      the backbone (:mod:`mmssl.models.utils.derived_sizes`).
    """

    stop_signals: Optional[StopSignals] = None
    _run_lock: Optional[RunLock] = None
    _rank_buffers: Optional[List[Dict]] = None
    _loaded_rank_buffers: Optional[List[Dict]] = None
    #: Whether checkpoints are sharded folders (set in register_hooks).
    sharded_checkpoints: bool = False

    # ------------------------------------------------------------ build
    def setup_env(self, env_cfg: Dict) -> None:
        """mmengine's setup, then warnings on rank 0 only.

        mmengine names a run (logger, visualizer, default scope) after the
        second it started, ``<config>_<YYYYmmdd_HHMMSS>``, and hands back
        the existing instance for a name it has seen: a second run started
        in the same second by the same process (``mmssl.apis.train``
        called twice) logged into the first run's files. Such a timestamp
        gets a suffix (``_1``, ``_2``, ...); every rank has the same
        history, so the ranks agree on it.
        """
        super().setup_env(env_cfg)
        warnings_on_rank_zero_only(get_rank())
        self._timestamp = unique_timestamp(self._timestamp)

    def build_logger(self, log_level='INFO', log_file=None, **kwargs):
        """mmengine's logger; long INFO dumps go to the log file only."""
        logger = super().build_logger(log_level, log_file, **kwargs)
        if shorten_console(logger):
            path = log_file or osp.join(self._log_dir, f'{self.timestamp}.log')
            logger.info(f'environment, config and hook order: in {path} only')
        return logger

    @classmethod
    def from_cfg(cls, cfg) -> 'SSLRunner':
        """Check and resolve ``cfg`` (a copy), then build the runner.

        Raises:
            UnknownConfigKeyError: For an unknown top-level key.
            ValueError: For a run fraction that cannot be resolved.
        """
        check_top_level_keys(list(cfg.keys()), getattr(cfg, 'filename', None))
        resolved = copy.deepcopy(cfg)
        notes = resolve_run_fractions(resolved)
        amp = (
            None
            if torch.cuda.is_available()
            else amp_on_cpu(resolved.get('optim_wrapper'))
        )
        runner = super().from_cfg(resolved)
        if amp:
            runner.logger.warning(amp)
        if notes:
            runner.logger.info('run fractions: ' + '; '.join(notes))
        if notes or amp:
            # The work dir's config copy shows what was used; the
            # checkpoints store the config as written, so that a resume
            # or requeue compares like with like.
            runner.cfg = copy.deepcopy(cfg)
        return runner

    def build_model(self, model: Union[nn.Module, Dict]) -> nn.Module:
        """mmengine's ``build_model`` after filling ``'auto'`` sizes."""
        if isinstance(model, dict):
            model = resolve_model_sizes(model)
        return super().build_model(model)

    def build_param_scheduler(self, scheduler):
        """mmengine's, after :func:`~.scheduler_steps.schedulers_for_run`.

        Fractional epochs become whole iterations, empty phases of a short
        run are dropped and one-step warm-ups get the step that ends them;
        each change is logged.
        """
        if not isinstance(scheduler, (list, tuple, dict)):
            return super().build_param_scheduler(scheduler)
        scheduler, notes = schedulers_for_run(
            scheduler, len(self.train_dataloader), self.train_loop.max_iters
        )
        if notes:
            self.logger.info('param schedulers: ' + '; '.join(notes))
        return super().build_param_scheduler(scheduler)

    def wrap_model(self, model_wrapper_cfg: Optional[Dict], model: nn.Module):
        """Wrap ``model``; adapt to CPU processes first when needed."""
        if (
            self.distributed
            and not torch.cuda.is_available()
            and not is_model_wrapper(model)
        ):
            if _has_sync_bn(model):
                warnings.warn(
                    'CPU distributed training: SyncBatchNorm '
                    'layers become BatchNorm (per-process batch '
                    'statistics).'
                )
                model = revert_sync_batchnorm(model)
            model_wrapper_cfg = cpu_model_wrapper_cfg(
                model_wrapper_cfg,
                self.cfg.get('find_unused_parameters', False),
            )
        if (
            self.distributed
            and _own_wrapper(model_wrapper_cfg)
            and not is_model_wrapper(model)
        ):
            # mmengine's wrap_model looks the type up in its root registry
            # only: build wrappers registered by mmssl (MMFullyShard) here
            from mmengine.device import get_device

            from mmssl.registry import MODEL_WRAPPERS

            return MODEL_WRAPPERS.build(
                model_wrapper_cfg,
                default_args=dict(
                    module=model.to(get_device()), init_weights=True
                ),
            )
        return super().wrap_model(model_wrapper_cfg, model)

    def default_custom_hooks(self) -> List[dict]:
        """Hooks every mmssl run gets unless the config already has them.

        Returns:
            list[dict]: Hook configs to append to ``custom_hooks``.
        """
        signal_cfg = self.cfg.get('signal_cfg') or {}
        hooks = [
            dict(type='DistLossAverageHook'),
            dict(type='BaseLRLogHook'),
            dict(type='LogIntervalHook'),
            dict(
                type='PreemptionHook',
                every_minutes=self.cfg.get('checkpoint_every_minutes'),
                exit_code=signal_cfg.get('exit_code'),
            ),
        ]
        warm_start = (self.cfg.get('model') or {}).get('warm_start') or {}
        if any(k in warm_start for k in WARM_START_SCHEDULE_KEYS):
            # the head-only phase and ramp of model.warm_start need it
            hooks.append(dict(type='WarmStartHook'))
        if self.distributed:
            # Average BN running statistics over ranks after each epoch, so
            # every rank (and the checkpoint) ends with the same buffers.
            hooks.append(dict(type='SyncBuffersHook'))
        return hooks

    def register_hooks(
        self,
        default_hooks: Optional[Dict] = None,
        custom_hooks: Optional[List] = None,
    ) -> None:
        """Register the config's hooks plus :meth:`default_custom_hooks`."""
        custom_hooks = list(custom_hooks or [])
        present = {_hook_type(h) for h in custom_hooks}
        for hook in self.default_custom_hooks():
            if hook['type'] not in present:
                custom_hooks.append(hook)
        super().register_hooks(default_hooks, custom_hooks)
        self.sharded_checkpoints = sharded_checkpoints_wanted(self)

    @staticmethod
    def build_dataloader(
        dataloader: Union[Any, Dict],
        seed: Optional[int] = None,
        diff_rank_seed: bool = False,
    ):
        """Build a dataloader; seed workers with mmssl's ``seed_worker``.

        Same as :meth:`mmengine.runner.Runner.build_dataloader`, except
        that without a ``worker_init_fn`` in the config and with a seed,
        workers get :func:`~mmssl.datasets.worker_seed.seed_worker`
        (mmengine's default replays the same augmentations every epoch
        when workers are not persistent), that ``num_workers=0``
        turns ``persistent_workers`` off and that a ``collate_fn``
        inherited from an ``mmpretrain::`` base loses its ``_scope_``
        (mmengine would pass it to the function).
        """
        if (
            isinstance(dataloader, dict)
            and not dataloader.get('num_workers', 0)
            and dataloader.get('persistent_workers')
        ):
            # torch refuses persistent workers without workers: num_workers=0
            # alone (the usual debugging switch) must just work
            dataloader = dict(dataloader, persistent_workers=False)
        collate = isinstance(dataloader, dict) and dataloader.get('collate_fn')
        if isinstance(collate, dict) and '_scope_' in collate:
            # mmengine passes every key but the type to the function; an
            # ``mmpretrain::`` base adds _scope_ to the dict
            collate = {k: v for k, v in collate.items() if k != '_scope_'}
            dataloader = dict(dataloader, collate_fn=collate)
        if (
            isinstance(dataloader, dict)
            and seed is not None
            and 'worker_init_fn' not in dataloader
        ):
            dataloader = copy.copy(dataloader)
            dataloader['worker_init_fn'] = dict(
                type=seed_worker,
                num_workers=dataloader.get('num_workers', 0),
                rank=get_rank(),
                seed=seed,
                # warnings of worker 0 only (mmssl/engine/runner/console.py)
                disable_subprocess_warning=dataloader.pop(
                    'disable_subprocess_warning', True
                ),
            )
        return Runner.build_dataloader(dataloader, seed, diff_rank_seed)

    def build_train_loop(self, loop):
        """mmengine's plain train loops become mmssl's resumable ones.

        See :func:`mmssl.engine.runner.loops.resumable_loop_cfg`.
        """
        return super().build_train_loop(resumable_loop_cfg(loop))

    # ------------------------------------------------------------ train
    def train(self) -> nn.Module:
        """Train while holding the work-dir lock, with signals caught.

        Raises:
            WorkDirBusyError: Another live run uses the work dir.
            TrainingStopped: A signal stopped training after a save.
        """
        self.acquire_run_lock()
        signal_cfg = self.cfg.get('signal_cfg') or {}
        self.stop_signals = StopSignals(
            signal_cfg.get('signals', DEFAULT_SIGNALS)
        )
        if not self.stop_signals.install():
            self.logger.warning(
                'not in the main thread: signals keep their handlers.'
            )
        try:
            return super().train()
        finally:
            self.stop_signals.restore()
            self.release_run_lock()

    def acquire_run_lock(self) -> None:
        """Rank 0 takes the work-dir lock; every rank learns the outcome.

        Raises:
            WorkDirBusyError: On every rank when a live run holds it.
        """
        lock_cfg = dict(self.cfg.get('lock_cfg') or {})
        if lock_cfg.pop('enable', True) is False:
            return
        outcome = [None]
        if is_main_process():
            lock = RunLock(self.work_dir, **lock_cfg)
            try:
                note = lock.acquire()
                self._run_lock = lock
                outcome = [('note', note)]
            except WorkDirBusyError as exc:
                outcome = [('busy', str(exc))]
        if self.distributed:
            broadcast_object_list(outcome)
        kind, text = outcome[0]
        if kind == 'busy':
            raise WorkDirBusyError(text)
        if text:
            self.logger.warning(text)

    def release_run_lock(self) -> None:
        """Give the work-dir lock back (idempotent)."""
        if self._run_lock is not None:
            self._run_lock.release()
            self._run_lock = None

    def _after_signal_save(self, path: str, signum: int) -> None:
        """Called on every rank after a save on a signal, before the exit.

        Inside a SLURM job, rank 0 requeues it (``scontrol requeue``), so
        that it starts again and resumes from ``path`` by itself (see
        :mod:`mmssl.launch.requeue`). ``signal_cfg.requeue=False`` or
        ``MMSSL_SLURM_REQUEUE=0`` turn that off.

        Args:
            path (str): The checkpoint saved.
            signum (int): The signal received.
        """
        signal_cfg = self.cfg.get('signal_cfg') or {}
        if not is_main_process() or not signal_cfg.get('requeue', True):
            return
        if requeue_wanted():
            message = requeue_slurm_job()
            print(f'mmssl: {message}', flush=True)
            self.logger.info(message)

    # ------------------------------------------------------------ loading
    def _trust(self) -> Optional[bool]:
        """``trust_checkpoint`` from the config; None follows the env."""
        return True if self.cfg.get('trust_checkpoint', False) else None

    def load_checkpoint(
        self,
        filename: str,
        map_location: Any = 'cpu',
        strict: bool = False,
        revise_keys: list = [(r'^module.', '')],  # noqa: B006 (mmengine's)
    ) -> dict:
        """Load ``filename`` into the model under mmssl's loading policy.

        Also called by :meth:`resume`; the loop state the checkpoint holds
        is kept for it. A sharded checkpoint folder gives its weights.
        """
        if osp.isdir(str(filename)):
            return load_sharded_weights(self, filename)
        with loading_policy(self._trust(), source=str(filename)):
            checkpoint = super().load_checkpoint(
                filename, map_location, strict, revise_keys
            )
        self._loaded_loop_state = checkpoint.get(LOOP_STATE_KEY)
        self._loaded_rank_buffers = checkpoint.get(RANK_BUFFERS_KEY)
        return checkpoint

    def resume(self, filename: str, *args, **kwargs) -> None:
        """mmengine's resume, then each rank's buffers and the loop state."""
        self._loaded_loop_state = self._loaded_rank_buffers = None
        if osp.isdir(str(filename)):
            options = {k: v for k, v in kwargs.items() if 'map' not in k}
            checkpoint = resume_sharded(self, filename, *args[:2], **options)
            self._loaded_loop_state = checkpoint.get(LOOP_STATE_KEY)
            self._loaded_rank_buffers = checkpoint.get(RANK_BUFFERS_KEY)
        else:
            super().resume(filename, *args, **kwargs)
        # this rank's own buffers (e.g. BatchNorm statistics), not rank 0's
        restore_rank_buffers(
            self.model, self._loaded_rank_buffers, self.logger
        )
        self._loaded_rank_buffers = None
        state, self._loaded_loop_state = self._loaded_loop_state, None
        loop = self.train_loop
        if state is not None and hasattr(loop, 'load_state_dict'):
            loop.load_state_dict(state)
        elif hasattr(loop, 'load_state_dict'):
            self.logger.warning(
                f'{filename} has no loop state (written by another runner '
                'or an older mmssl); resuming from its epoch/iter counters '
                'only.'
            )

    def _init_model_weights(self) -> None:
        """``init_weights`` (``init_cfg`` Pretrained) under the policy.

        A wrapper that initialised the weights before sharding them
        (``MMFullyShard``) says so with ``weights_initialized``.
        """
        if getattr(self.model, 'weights_initialized', False):
            return
        with loading_policy(self._trust(), source='init_cfg'):
            super()._init_model_weights()

    # ------------------------------------------------------------ saving
    def call_hook(self, fn_name: str, **kwargs) -> None:
        """Call hooks; before ``before_save_checkpoint`` add the loop state.

        The loop state (data position, RNG states) is part of every
        checkpoint this runner writes, whichever checkpoint hook the
        config names.
        """
        if fn_name == 'before_save_checkpoint':
            loop = self._train_loop
            if hasattr(loop, 'state_dict'):
                kwargs['checkpoint'][LOOP_STATE_KEY] = loop.state_dict()
            if self._rank_buffers is not None:
                kwargs['checkpoint'][RANK_BUFFERS_KEY] = self._rank_buffers
        super().call_hook(fn_name, **kwargs)

    def save_checkpoint(
        self,
        out_dir: str,
        filename: str,
        file_client_args: Optional[dict] = None,
        *args,
        backend_args: Optional[dict] = None,
        **kwargs,
    ) -> None:
        """mmengine's ``save_checkpoint``, atomic for local folders.

        The checkpoint is written by the parent under a hidden temporary
        name in ``out_dir``, fsynced, then renamed onto ``filename``: a
        process killed during the save leaves the previous files intact
        and nothing partial under a checkpoint's name. With
        :attr:`sharded_checkpoints`, ``filename`` is a folder written by
        every rank (:func:`.sharded_checkpoints.save_sharded_checkpoint`).
        """
        # every rank's buffers, gathered here: the parent is master_only
        self._rank_buffers = gather_rank_buffers(self.model)
        try:
            if self.sharded_checkpoints:
                save_sharded_checkpoint(
                    self,
                    out_dir,
                    filename,
                    *args,
                    file_client_args=file_client_args,
                    backend_args=backend_args,
                    **kwargs,
                )
                return
            self._save_checkpoint_atomic(
                out_dir,
                filename,
                file_client_args,
                *args,
                backend_args=backend_args,
                **kwargs,
            )
        finally:
            self._rank_buffers = None

    def _save_checkpoint_atomic(
        self,
        out_dir: str,
        filename: str,
        file_client_args: Optional[dict] = None,
        *args,
        backend_args: Optional[dict] = None,
        **kwargs,
    ) -> None:
        local = file_client_args is None and isinstance(
            get_file_backend(out_dir, backend_args=backend_args),
            LocalBackend,
        )
        if not local or not is_main_process():
            # the parent is master_only: other ranks do nothing
            super().save_checkpoint(
                out_dir,
                filename,
                file_client_args,
                *args,
                backend_args=backend_args,
                **kwargs,
            )
            return
        final = osp.join(out_dir, filename)
        tmp_name = f'.{osp.basename(filename)}.{os.getpid()}.tmp'
        tmp = osp.join(osp.dirname(final), tmp_name)
        try:
            super().save_checkpoint(
                osp.dirname(final),
                tmp_name,
                None,
                *args,
                backend_args=backend_args,
                **kwargs,
            )
            _fsync_file_and_dir(tmp)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
        _fsync_file_and_dir(final)


# Older configs and tools name the CPU-aware runner; it is SSLRunner.
RUNNERS.register_module(name='CPUAwareRunner', module=SSLRunner)
CPUAwareRunner = SSLRunner


def build_runner(cfg) -> Runner:
    """Build the runner for ``cfg``.

    ``cfg.runner_type`` (a registered runner) wins, as in mmengine's tools;
    otherwise :class:`SSLRunner`.

    Args:
        cfg (mmengine.Config): The full config.

    Returns:
        Runner: The runner.
    """
    if 'runner_type' in cfg:
        return RUNNERS.build(cfg)
    return SSLRunner.from_cfg(cfg)
