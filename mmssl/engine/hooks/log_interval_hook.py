"""Never let the logger interval exceed an epoch."""

from typing import Any, Optional

from mmengine.hooks import Hook, LoggerHook

from mmssl.registry import HOOKS


def clamp_logger_interval(runner: Any) -> Optional[str]:
    """Lower every ``LoggerHook.interval`` to the iterations of an epoch.

    With an interval of 50 and 20 iterations per epoch, an epoch-based
    run shows no training line at all; the interval becomes 20 (or the
    run's ``max_iters`` if that is shorter).

    Args:
        runner (Runner): A runner whose train loop is built.

    Returns:
        str | None: A note saying what was changed, or None.
    """
    limit = min(len(runner.train_dataloader), runner.train_loop.max_iters)
    limit = max(limit, 1)
    note = None
    for hook in runner.hooks:
        if isinstance(hook, LoggerHook) and hook.interval > limit:
            note = (
                f'logger interval {hook.interval} is longer than an epoch '
                f'({limit} iterations); logging every {limit} iterations '
                '(set default_hooks.logger.interval to choose another)'
            )
            hook.interval = limit
    return note


@HOOKS.register_module()
class LogIntervalHook(Hook):
    """Apply :func:`clamp_logger_interval` before training starts."""

    priority = 'VERY_HIGH'

    def before_train(self, runner) -> None:
        """Clamp the interval and log a note when it changed."""
        note = clamp_logger_interval(runner)
        if note:
            runner.logger.info(note)
        # optim wrappers that keep values on the device (NaNGuard with a
        # fused optimiser) read them at the logger's interval only
        intervals = [
            h.interval for h in runner.hooks if isinstance(h, LoggerHook)
        ]
        wrapper = getattr(runner, 'optim_wrapper', None)
        if intervals and hasattr(wrapper, 'log_interval'):
            wrapper.log_interval = min(intervals)
