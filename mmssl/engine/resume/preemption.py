"""Save and stop on a signal; periodic safety checkpoints.

:class:`PreemptionHook` runs last after every training iteration. All
ranks combine, in ONE ``all_reduce`` (MAX) of two integers, the signal
each rank has seen (see :class:`mmssl.launch.signals.StopSignals`) and
whether rank 0's clock says a safety checkpoint is due. Then, on every
rank alike:

* a signal: save an iteration checkpoint (atomically, ``last_checkpoint``
  updated after the file), rank 0 prints ``stopped at epoch E, iter I on
  SIGTERM; saved <path>; continue with --resume``, and
  :class:`TrainingStopped` ends ``runner.train()``;
* a safety checkpoint due: save one, update ``last_checkpoint`` and
  delete the previous safety checkpoint (never one the checkpoint hook
  keeps).

The hook is added by :class:`~mmssl.engine.runner.SSLRunner`; it does
nothing without its runner's signal state.
"""

import contextlib
import logging
import os
import os.path as osp
import shutil
import time
from typing import Optional

import torch
from mmengine.dist import all_reduce, barrier, get_rank, is_main_process
from mmengine.hooks import CheckpointHook, Hook
from mmengine.runner import IterBasedTrainLoop

from mmssl.checkpoint import atomic_write_text
from mmssl.launch.signals import signal_name
from mmssl.registry import HOOKS


class TrainingStopped(SystemExit):
    """Training stopped on a signal after saving a checkpoint.

    A ``SystemExit``: uncaught, the process ends quietly with ``code``.

    Attributes:
        code (int): The exit status.
        signum (int): The signal.
        checkpoint (str): The checkpoint saved.
    """

    def __init__(self, code: int, signum: int, checkpoint: str) -> None:
        super().__init__(code)
        self.signum = signum
        self.checkpoint = checkpoint


def exit_status(signum: int, configured: Optional[int] = None) -> int:
    """The exit status after a save on ``signum``.

    ``128 + signum`` by default (143 for SIGTERM, 138 for SIGUSR1, 130 for
    SIGINT): what a shell reports for a process ended by that signal, so
    schedulers, ``&&`` chains and CI see an unfinished run as not
    successful. ``signal_cfg.exit_code`` overrides it (e.g. 0 where a
    requeue flow wants a clean exit).
    """
    return int(configured) if configured is not None else 128 + signum


def _log_to_files(runner, message: str) -> None:
    """Write ``message`` to the run's log file only (not the console)."""
    logger = runner.logger
    record = logger.makeRecord(
        logger.name, logging.INFO, __file__, 0, message, None, None
    )
    for handler in logger.handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


@HOOKS.register_module()
class PreemptionHook(Hook):
    """Agree on stop requests and safety saves at iteration boundaries.

    Args:
        every_minutes (float, optional): Save a safety checkpoint when this
            many minutes (rank 0's clock) have passed since training
            started or the last safety save. None: never. Defaults to
            None.
        exit_code (int, optional): Exit status after a signal save; None
            gives ``128 + signum``. Defaults to None.
    """

    priority = 'LOWEST'

    def __init__(
        self,
        every_minutes: Optional[float] = None,
        exit_code: Optional[int] = None,
    ) -> None:
        if every_minutes is not None and every_minutes <= 0:
            raise ValueError(
                f'checkpoint_every_minutes must be > 0, got {every_minutes}'
            )
        self.every_s = None if every_minutes is None else every_minutes * 60
        self.exit_code = exit_code
        self._last_save = time.monotonic()
        self._last_safety: Optional[str] = None
        self._pending: Optional[tuple] = None  # (batch_idx, signum)

    def before_train(self, runner) -> None:
        self._last_save = time.monotonic()
        self._pending = None

    def _requests(self, runner) -> torch.Tensor:
        """``[signal, safety_due]``, agreed on by all ranks (MAX)."""
        stop = getattr(runner, 'stop_signals', None)
        signum = stop.received if stop is not None else None
        due = (
            self.every_s is not None
            and get_rank() == 0
            and time.monotonic() - self._last_save >= self.every_s
        )
        flags = torch.tensor([signum or 0, int(due)], dtype=torch.int64)
        if runner.distributed:
            all_reduce(flags, op='max')
        return flags

    def after_train_iter(
        self, runner, batch_idx: int, data_batch=None, outputs=None
    ) -> None:
        """Check the agreed requests; save, and maybe stop."""
        signum, due = (int(v) for v in self._requests(runner))
        if signum and self._last_batch_of_epoch(runner, batch_idx):
            # The epoch's end hooks (e.g. buffer syncing) must run before
            # the save: a resumed run starts the next epoch and would skip
            # them. All ranks agreed on the signal above.
            self._pending = (batch_idx, signum)
        elif signum:
            self._stop(runner, batch_idx, signum)
        elif due:
            self._safety_save(runner)

    def after_train_epoch(self, runner) -> None:
        """Stop for a signal that came in the epoch's last iteration."""
        if self._pending is not None:
            batch_idx, signum = self._pending
            self._pending = None
            self._stop(runner, batch_idx, signum, by_epoch=True)

    @staticmethod
    def _last_batch_of_epoch(runner, batch_idx: int) -> bool:
        loop = runner.train_loop
        if isinstance(loop, IterBasedTrainLoop):
            return False
        return batch_idx + 1 == len(loop.dataloader)

    # ------------------------------------------------------------ saving
    def _save(self, runner, by_epoch: bool = False) -> str:
        """An iteration checkpoint in the work dir; returns its path.

        ``by_epoch``: saved after the epoch's end (``runner.iter`` then
        already counts the epoch's last iteration), as ``CheckpointHook``
        saves its epoch checkpoints."""
        done = runner.iter if by_epoch else runner.iter + 1
        filename = f'iter_{done}.pth'
        runner.save_checkpoint(
            runner.work_dir,
            filename,
            save_optimizer=True,
            save_param_scheduler=True,
            by_epoch=by_epoch,
        )
        path = osp.join(runner.work_dir, filename)
        if is_main_process():
            atomic_write_text(
                path, osp.join(runner.work_dir, 'last_checkpoint')
            )
        return path

    def _kept_by_checkpoint_hook(self, runner, path: str) -> bool:
        for hook in runner.hooks:
            if isinstance(hook, CheckpointHook) and not hook.by_epoch:
                names = {
                    hook.filename_tmpl.format(step)
                    for step in getattr(hook, 'keep_ckpt_ids', [])
                }
                if osp.basename(path) in names:
                    return True
        return False

    def _safety_save(self, runner) -> None:
        path = self._save(runner)
        self._last_save = time.monotonic()
        previous, self._last_safety = self._last_safety, path
        runner.logger.info(f'safety checkpoint saved to {path}')
        if (
            is_main_process()
            and previous not in (None, path)
            and not self._kept_by_checkpoint_hook(runner, previous)
        ):
            if osp.isdir(previous):  # a sharded checkpoint folder
                shutil.rmtree(previous, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(previous)

    def _where(self, runner, batch_idx: int) -> str:
        loop = runner.train_loop
        if isinstance(loop, IterBasedTrainLoop):
            return f'iter {runner.iter + 1}'
        return f'epoch {runner.epoch + 1}, iter {batch_idx + 1}'

    def _stop(
        self, runner, batch_idx: int, signum: int, by_epoch: bool = False
    ) -> None:
        path = self._save(runner, by_epoch)
        name = signal_name(signum)
        message = (
            f'stopped at {self._where(runner, batch_idx)} on {name}; saved '
            f'{path}; continue with --resume'
        )
        if is_main_process():
            runner.release_run_lock()
            print(f'mmssl: {message}', flush=True)
            _log_to_files(runner, message)
        # nobody exits before rank 0 has written the checkpoint
        barrier()
        runner._after_signal_save(path, signum)
        raise TrainingStopped(
            exit_status(signum, self.exit_code), signum, path
        )
