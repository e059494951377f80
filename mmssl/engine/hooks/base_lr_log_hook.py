"""Log the config's learning rate as scheduled, not a param group's."""

import math
from typing import Any, Optional

from mmengine.hooks import Hook

from mmssl.registry import HOOKS


def scheduled_base_lr(optimizer: Any) -> Optional[float]:
    """The optimizer's base ``lr`` times the schedulers' current factor.

    mmengine logs the ``lr`` of the first param group, which with
    layer-wise lr decay is a decayed value (e.g. the patch embedding's).
    Param schedulers scale every group by about the same factor (exactly,
    but for an absolute ``eta_min``), so the factor is ``lr /
    initial_lr`` of the group whose ``initial_lr`` is closest to the base
    lr (exact when a group has the base lr, as heads usually do); the base
    lr is the optimizer's constructor ``lr`` (the config's, after any
    ``--auto-scale-lr``).

    Args:
        optimizer (torch.optim.Optimizer): The optimizer.

    Returns:
        float | None: The scheduled base lr; None when the optimizer has
        no ``lr`` default.
    """
    base = optimizer.defaults.get('lr')
    if base is None:
        return None
    groups = [g for g in optimizer.param_groups if g.get('initial_lr')]
    if not groups or not base:
        return float(base)  # no scheduler: the lr is constant
    group = min(
        groups, key=lambda g: abs(math.log(g['initial_lr'] / float(base)))
    )
    return float(base) * group['lr'] / group['initial_lr']


@HOOKS.register_module()
class BaseLRLogHook(Hook):
    """Show ``base_lr`` (the config's lr, as scheduled) in the train log.

    Replaces mmengine's ``lr`` entry (the first param group's lr, set by
    ``RuntimeInfoHook``) with ``base_lr`` for a single optimizer; runs
    before ``LoggerHook``. A wrapper holding several optimizers is left as
    mmengine logs it.
    """

    priority = 'NORMAL'  # after RuntimeInfoHook, before LoggerHook

    def after_train_iter(
        self, runner, batch_idx: int, data_batch=None, outputs=None
    ) -> None:
        """Record ``train/base_lr`` and drop ``train/lr``."""
        optimizer = getattr(runner.optim_wrapper, 'optimizer', None)
        if optimizer is None:
            return
        base = scheduled_base_lr(optimizer)
        if base is None:
            return
        hub = runner.message_hub
        hub.update_scalar('train/base_lr', base)
        hub.log_scalars.pop('train/lr', None)
