"""How :class:`~.runner.SSLRunner` trains: work-dir lock and signals.

A mixin of ``SSLRunner`` (listed before mmengine's ``Runner``, so its
``super()`` calls reach ``Runner``). See the class docstring of
:class:`~.runner.SSLRunner` for the behaviour as a whole.
"""

from typing import Optional

from mmengine.dist import broadcast_object_list, is_main_process
from torch import nn

from mmssl.launch.lock import RunLock, WorkDirBusyError
from mmssl.launch.requeue import requeue_slurm_job, requeue_wanted
from mmssl.launch.signals import DEFAULT_SIGNALS, StopSignals


class RunLifecycleMixin:
    """``train`` under the work-dir lock with stop signals caught."""

    stop_signals: Optional[StopSignals] = None
    _run_lock: Optional[RunLock] = None

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
