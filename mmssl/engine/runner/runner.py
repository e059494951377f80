"""mmssl's registered Runner (``runner_type = 'SSLRunner'``).

Everything mmssl changes about how a run is built, saved, loaded and
stopped lives here, in one class a config selects, instead of in patches
applied to mmengine at import time. ``Runner.from_cfg``-style use from
Python (``RUNNERS.build(cfg)`` or ``SSLRunner.from_cfg(cfg)``) and
``tools/train.py`` therefore build the same runner with the same hooks.
"""

import copy
import os.path as osp
import warnings
from typing import Any, Dict, List, Optional, Union

import torch
from mmengine.dist import get_rank
from mmengine.model import is_model_wrapper, revert_sync_batchnorm
from mmengine.runner import Runner
from torch import nn

from mmssl.checkpoint.pretrained import overwritten_after_load
from mmssl.checkpoint.warm_start import (
    SCHEDULE_KEYS as WARM_START_SCHEDULE_KEYS,
)
from mmssl.config import resolve, resolve_model_sizes, schedulers_for_run
from mmssl.datasets.worker_seed import seed_worker
from mmssl.engine.optimizers.cpu_amp_optim_wrapper import amp_on_cpu
from mmssl.engine.resume.checkpointing import (
    LOOP_STATE_KEY,
    CheckpointingMixin,
)
from mmssl.engine.resume.sharded import sharded_checkpoints_wanted
from mmssl.registry import RUNNERS

from .console import quiet_known_warnings, shorten_console
from .distributed import cpu_model_wrapper_cfg
from .lifecycle import RunLifecycleMixin
from .loops import resumable_loop_cfg
from .workers import (
    configured_workers,
    fit_dataloader_to_machine,
    fit_threads_to_machine,
)

__all__ = ['LOOP_STATE_KEY', 'SSLRunner', 'build_runner', 'unique_timestamp']


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
class SSLRunner(RunLifecycleMixin, CheckpointingMixin, Runner):
    """:class:`mmengine.runner.Runner` with mmssl's run-time behaviour.

    Differences from ``Runner`` (all chosen by ``runner_type`` in the
    config, none patched into mmengine):

    * **CPU DDP.** In a distributed run without CUDA, DDP refuses
      ``device_ids`` and SyncBatchNorm; the model is wrapped with
      ``device_ids=None`` and SyncBN turned into BN (with a warning), so a
      GPU config can be debugged with CPU processes unchanged.
    * **Default hooks.** :class:`~mmssl.engine.hooks.DistLossAverageHook`
      (log the mean loss over ranks) and
      :class:`~mmssl.engine.resume.PreemptionHook` are added unless the
      config has them; in a distributed run ``SyncBuffersHook`` too.
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
      (:mod:`mmssl.engine.resume.sharded`).
    * **Signals.** During :meth:`train`, the signals of
      ``signal_cfg.signals`` (default SIGTERM, SIGUSR1, SIGINT) only set a
      flag; at the next iteration boundary all ranks agree, save a
      checkpoint and stop (:class:`~mmssl.engine.resume.PreemptionHook`),
      and ``train()`` raises :class:`~mmssl.engine.resume.TrainingStopped`
      (a ``SystemExit`` with status ``128 + signum`` unless
      ``signal_cfg.exit_code`` says otherwise).
      ``checkpoint_every_minutes = N`` adds a safety checkpoint every N
      minutes.
    * **Every rank's buffers** (per-rank BatchNorm statistics) travel in
      the checkpoint and come back to their rank on resume
      (:mod:`mmssl.engine.resume.rank_buffers`).
    * **One run per work dir.** Rank 0 holds ``mmssl-run.lock`` in the
      work dir while training (:mod:`mmssl.launch.lock`); a second run
      there raises :class:`~mmssl.launch.lock.WorkDirBusyError`.
    * **Config checks and derived values** (:meth:`from_cfg`):
      :func:`mmssl.config.resolve` refuses an unknown top-level key and
      turns run fractions such as ``end='10%'`` and ``'auto'`` neck/head
      sizes into numbers for this run.
    """

    # ------------------------------------------------------------ build
    def setup_env(self, env_cfg: Dict) -> None:
        """mmengine's setup, then warnings on rank 0 only, and TF32.

        ``env_cfg.tf32`` (default True) lets float32 matrix products and
        convolutions on CUDA use TensorFloat-32 (:func:`set_tf32`), as the
        reference DINOv2 training does; False keeps full float32.

        mmengine names a run (logger, visualizer, default scope) after the
        ``env_cfg.threads`` (or ``OMP_NUM_THREADS``) sets torch's CPU
        threads; without either, a CPU run takes its share of the cores
        (:func:`~.workers.fit_threads_to_machine`), said in one log line.

        mmengine names a run (logger, visualizer, default scope) after the
        second it started, ``<config>_<YYYYmmdd_HHMMSS>``, and hands back
        the existing instance for a name it has seen: a second run started
        in the same second by the same process (``mmssl.apis.train``
        called twice) logged into the first run's files. Such a timestamp
        gets a suffix (``_1``, ``_2``, ...); every rank has the same
        history, so the ranks agree on it.
        """
        quiet_known_warnings()  # before mmengine's setup warns
        # before mmengine sets OMP_NUM_THREADS for distributed runs: only
        # the user's (or the launcher's) value counts as chosen
        self._threads_note = fit_threads_to_machine(
            workers=configured_workers(self),
            threads=(env_cfg or {}).get('threads'),
        )
        super().setup_env(env_cfg)
        quiet_known_warnings(get_rank())
        self._timestamp = unique_timestamp(self._timestamp)
        set_tf32(env_cfg.get('tf32', True))

    def build_logger(self, log_level='INFO', log_file=None, **kwargs):
        """mmengine's logger; long INFO dumps go to the log file only."""
        logger = super().build_logger(log_level, log_file, **kwargs)
        if shorten_console(logger):
            path = log_file or osp.join(self._log_dir, f'{self.timestamp}.log')
            # said when the run starts (train/val/test): a failed start or
            # a dry run removes the file and must not point at it
            self._log_file_note = (
                f'environment, config and hook order: in {path} only'
            )
        note = getattr(self, '_threads_note', None)
        if note:
            logger.info(note)
        return logger

    @classmethod
    def from_cfg(cls, cfg) -> 'SSLRunner':
        """Resolve a copy of ``cfg`` (:func:`mmssl.config.resolve`), then
        build the runner.

        Raises:
            UnknownConfigKeyError: For an unknown top-level key.
            ValueError: For a run fraction or an ``'auto'`` size that
                cannot be resolved.
        """
        resolved = copy.deepcopy(cfg)
        # 'auto' sizes: in build_model, after the seed (see resolve)
        notes = resolve(resolved, sizes=False)
        amp = (
            None
            if torch.cuda.is_available()
            else amp_on_cpu(resolved.get('optim_wrapper'))
        )
        runner = super().from_cfg(resolved)
        if amp:
            runner.logger.warning(amp)
        for note in notes:
            runner.logger.info(note)
        # The work dir's config copy shows what was used; the checkpoints
        # store the config as written, so that a resume or requeue compares
        # like with like.
        runner.cfg = copy.deepcopy(cfg)
        return runner

    def build_model(self, model: Union[nn.Module, Dict]) -> nn.Module:
        """mmengine's ``build_model`` after filling ``'auto'`` sizes."""
        if isinstance(model, dict):
            model = resolve_model_sizes(model)
        return super().build_model(model)

    def _init_model_weights(self) -> None:
        """mmengine's, then a warning for every tensor that a module's own
        init changed after ``PretrainedStrip`` had loaded it."""
        super()._init_model_weights()
        model = (
            self.model.module if is_model_wrapper(self.model) else self.model
        )
        for line in overwritten_after_load(model):
            self.logger.warning(line)

    def build_param_scheduler(self, scheduler):
        """mmengine's, after :func:`mmssl.config.schedulers_for_run`.

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
            dict(type='TimeLogHook'),
            dict(type='RunSummaryHook'),
            # DINO family only: warns once when loss_dino sits at ln K
            dict(type='UniformCollapseHook'),
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
        that ``num_workers`` is capped at the CPU cores available and
        ``pin_memory`` dropped without CUDA (:mod:`.workers`, logged),
        that without a ``worker_init_fn`` in the config and with a seed,
        workers get :func:`~mmssl.datasets.worker_seed.seed_worker`
        (mmengine's default replays the same augmentations every epoch
        when workers are not persistent), that ``num_workers=0``
        turns ``persistent_workers`` off and that a ``collate_fn``
        inherited from an ``mmpretrain::`` base loses its ``_scope_``
        (mmengine would pass it to the function).
        """
        dataloader = _fit_to_machine(dataloader)
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


def _fit_to_machine(dataloader):
    """:func:`~.workers.fit_dataloader_to_machine`, its note logged."""
    from mmengine.logging import print_log

    dataloader, note = fit_dataloader_to_machine(dataloader)
    if note:
        print_log(note, logger='current')
    return dataloader


def set_tf32(enabled) -> None:
    """TensorFloat-32 for float32 matmuls and cuDNN convolutions on CUDA.

    PyTorch leaves TF32 matmuls off by default; Ampere and newer GPUs run
    them several times faster with TF32 (10 mantissa bits for the
    products, float32 accumulation), and the DINOv2 reference turns them
    on for its training (facebookresearch/dinov2, ``train/train.py``).
    Mixed precision (bf16/fp16) steps are not affected. No effect on CPU.

    Raises:
        TypeError: ``enabled`` is not a bool.
    """
    if not isinstance(enabled, bool):
        raise TypeError(
            f'env_cfg.tf32 must be True or False, got {enabled!r}: '
            '--cfg-options env_cfg.tf32=False keeps full float32 matmuls.'
        )
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


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
