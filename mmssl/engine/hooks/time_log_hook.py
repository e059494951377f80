"""A training log line at least every N seconds, whatever the interval."""

import time
from typing import Optional

from mmengine.hooks import Hook, LoggerHook

from mmssl.registry import HOOKS


def _logger_hook(runner) -> Optional[LoggerHook]:
    return next((h for h in runner.hooks if isinstance(h, LoggerHook)), None)


def logger_hook_logs(hook: LoggerHook, runner, batch_idx: int) -> bool:
    """Whether mmengine's ``LoggerHook`` writes a training line after this
    iteration (its own rule: every ``interval`` iterations of the epoch,
    and at the end of an epoch)."""
    if hook.every_n_inner_iters(batch_idx, hook.interval):
        return True
    return hook.end_of_epoch(runner.train_dataloader, batch_idx) and (
        not hook.ignore_last or len(runner.train_dataloader) <= hook.interval
    )


@HOOKS.register_module()
class TimeLogHook(Hook):
    """Log a training line when ``seconds`` passed since the last one.

    mmengine logs every ``default_hooks.logger.interval`` iterations; with
    slow iterations (a ViT on a CPU: 20 s each) that is minutes of
    silence. This hook writes the same line (loss, time, ETA) once
    ``seconds`` have passed without one, and after the first iteration of
    the run when it ended more than ``first_after`` seconds after training
    started, so that a line comes within the first minute.

    Args:
        seconds (float): Longest silence in seconds. Defaults to 30.
        first_after (float): A line after the first iteration when it took
            longer than this. Defaults to 15.
    """

    priority = 'LOW'  # after LoggerHook (BELOW_NORMAL)

    def __init__(self, seconds: float = 30.0, first_after: float = 15.0):
        self.seconds = seconds
        self.first_after = first_after
        self._last: Optional[float] = None
        self._first_iter: Optional[int] = None

    def before_train(self, runner) -> None:
        self._last = time.monotonic()
        self._first_iter = runner.iter

    def after_train_iter(
        self, runner, batch_idx: int, data_batch=None, outputs=None
    ) -> None:
        """Write the training line if it is due and LoggerHook did not."""
        now = time.monotonic()
        if self._last is None:
            self._last = now
        hook = _logger_hook(runner)
        if hook is None:
            return
        if logger_hook_logs(hook, runner, batch_idx):
            self._last = now
            return
        first = runner.iter == self._first_iter
        due = now - self._last >= (self.first_after if first else self.seconds)
        if not due:
            return
        _, line = runner.log_processor.get_log_after_iter(
            runner, batch_idx, 'train'
        )
        runner.logger.info(line)
        self._last = now
