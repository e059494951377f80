"""How :class:`~.runner.SSLRunner` trains: work-dir lock and signals;
:class:`WorkDirTidy` for runs that never trained.

A mixin of ``SSLRunner`` (listed before mmengine's ``Runner``, so its
``super()`` calls reach ``Runner``). See the class docstring of
:class:`~.runner.SSLRunner` for the behaviour as a whole.
"""

import os
import os.path as osp
import re
import shutil
from typing import Optional

from mmengine.dist import broadcast_object_list, is_main_process
from torch import nn

from mmssl.launch.lock import RunLock, WorkDirBusyError
from mmssl.launch.requeue import requeue_slurm_job, requeue_wanted
from mmssl.launch.signals import DEFAULT_SIGNALS, StopSignals

from .workers import stop_persistent_workers


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
        self.announce_log_file()
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
            self.stop_loader_workers()

    def announce_log_file(self) -> None:
        """Log, once, where the environment and config dumps are (only
        when a run starts, so that no removed file is named)."""
        note = getattr(self, '_log_file_note', None)
        if note:
            self.logger.info(note)
            self._log_file_note = None

    def val(self) -> dict:
        """Validate; the loader's persistent workers stop afterwards."""
        self.announce_log_file()
        try:
            return super().val()
        finally:
            self.stop_loader_workers()

    def test(self) -> dict:
        """Test; the loader's persistent workers stop afterwards."""
        self.announce_log_file()
        try:
            return super().test()
        finally:
            self.stop_loader_workers()

    def val_loop_once(self) -> dict:
        """Run the validation loop once more after ``train`` (without the
        run hooks that ``val`` calls), then stop its workers."""
        try:
            return self.val_loop.run()
        finally:
            self.stop_loader_workers()

    def stop_loader_workers(self) -> None:
        """Stop the persistent dataloader workers of every built loop
        (:func:`~.workers.stop_persistent_workers`), so none is left for
        the garbage collector after ``train``, ``val`` or ``test``."""
        for name in ('_train_loop', '_val_loop', '_test_loop'):
            loop = getattr(self, name, None)
            if loop is None or isinstance(loop, dict):  # not built
                continue
            loaders = [getattr(loop, 'dataloader', None)]
            data = getattr(loop, '_data', None)  # ResumableData
            if data is not None:
                loaders += data.loaders()
            for loader in loaders:
                stop_persistent_workers(loader)

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


#: What a run that never trained leaves in its work dir: the timestamped
#: log folder, the config copy and the lock file.
_UNSTARTED_RUN_ENTRY = re.compile(r'^(\d{8}_\d{6}(_\d+)?|.*\.py|.*\.lock)$')


class WorkDirTidy:
    """Remove what a run that never trained added to its work dir.

    Created before the runner; :meth:`tidy` (after ``--dry-run`` or a
    user error) removes the entries added since that look like a run's
    start (timestamped log folders, the config copy, the lock file) and
    the folders it created (the work dir, its missing parents) when they
    are empty again; nothing when anything else is new (a checkpoint: the
    run did start). Only rank 0 removes anything.

    Args:
        work_dir (str): The run's work dir.
    """

    def __init__(self, work_dir: str) -> None:
        self.work_dir = work_dir
        self.existed = osp.isdir(work_dir)
        self.before = set(os.listdir(work_dir)) if self.existed else set()
        # the folders this run will create: work_dir and missing parents
        self.new_dirs = []
        path = osp.abspath(work_dir)
        while not osp.exists(path) and path != osp.dirname(path):
            self.new_dirs.append(path)
            path = osp.dirname(path)

    def tidy(self) -> None:
        """Remove the new entries (see the class docstring)."""
        if not is_main_process() or not osp.isdir(self.work_dir):
            return
        new = set(os.listdir(self.work_dir)) - self.before
        if any(not _UNSTARTED_RUN_ENTRY.match(name) for name in new):
            return  # a checkpoint or more: the run did start, keep its log
        for name in new:
            path = osp.join(self.work_dir, name)
            if osp.isdir(path) and not osp.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
        for path in self.new_dirs:  # innermost first
            if osp.isdir(path) and not os.listdir(path):
                os.rmdir(path)
