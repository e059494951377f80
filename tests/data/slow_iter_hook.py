"""A hook that sleeps after every training iteration.

Imported by the signal tests through ``custom_imports`` so that a signal
sent after iteration k reliably lands before the run ends.
"""

import time

from mmengine.hooks import Hook

from mmssl.registry import HOOKS


@HOOKS.register_module()
class SlowIterHook(Hook):
    """Sleep ``seconds`` after each training iteration (before the
    preemption check, which runs last)."""

    priority = 'VERY_HIGH'

    def __init__(self, seconds: float = 0.05) -> None:
        self.seconds = seconds

    def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None):
        time.sleep(self.seconds)
