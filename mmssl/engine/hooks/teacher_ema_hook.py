"""EMA update of a student/teacher model with a cosine momentum schedule."""

import math
from typing import Optional

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS


def cosine_momentum(
    it: int, max_iters: int, start: float, end: float
) -> float:
    """DINO's cosine: ``end + (start - end) (1 + cos(pi it / N)) / 2``."""
    if max_iters <= 0:
        return end
    progress = min(max(it, 0), max_iters) / max_iters
    return end + 0.5 * (start - end) * (1.0 + math.cos(math.pi * progress))


@HOOKS.register_module()
class TeacherEMAHook(Hook):
    """Update the teacher after every optimiser step (DINO / iBOT / DINOv2).

    ``teacher = m * teacher + (1 - m) * student`` with the teacher momentum
    ``m`` following a cosine from ``momentum`` (0.992 in DINOv2, 0.996 in
    DINO) to ``end_momentum`` (1.0) over all training iterations, computed
    from ``runner.iter`` (so it is exact after a resume). The update is
    skipped when the optimiser skipped the step (``NaNGuardOptimWrapper``;
    with a fused optimiser the wrapper's device ``skip_flag`` sets the
    momentum to 1 on the device, without a host sync).
    The momentum is logged as ``teacher_momentum``.

    The model must have ``update_teacher(momentum)`` (``DINO`` and its
    subclasses).

    Args:
        momentum (float): Start teacher momentum. Defaults to 0.992.
        end_momentum (float): Final teacher momentum. Defaults to 1.0.
    """

    priority = 'ABOVE_NORMAL'

    def __init__(
        self, momentum: float = 0.992, end_momentum: float = 1.0
    ) -> None:
        for name, val in (
            ('momentum', momentum),
            ('end_momentum', end_momentum),
        ):
            if not 0.0 <= val <= 1.0:
                raise ValueError(f'{name} must be in [0, 1], got {val}.')
        self.momentum = momentum
        self.end_momentum = end_momentum

    def before_train(self, runner) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        if not hasattr(model, 'update_teacher'):
            raise TypeError(
                f'TeacherEMAHook needs a model with '
                f'update_teacher(); got {type(model).__name__}.'
            )

    def after_train_iter(
        self,
        runner,
        batch_idx: int,
        data_batch: Optional[dict] = None,
        outputs: Optional[dict] = None,
    ) -> None:
        m = cosine_momentum(
            runner.iter, runner.max_iters, self.momentum, self.end_momentum
        )
        runner.message_hub.update_scalar('train/teacher_momentum', m)
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        skip = getattr(runner.optim_wrapper, 'skip_flag', None)
        if skip is not None:  # decided on the device: no host sync
            model.update_teacher(m, skip=skip)
            return
        if getattr(runner.optim_wrapper, 'last_step_skipped', False):
            return
        model.update_teacher(m)
