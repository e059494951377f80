"""Linear warmup of the teacher temperature."""

from typing import Optional

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS


def warmup_value(t: int, warmup_steps: int, start: float, end: float) -> float:
    """``np.linspace(start, end, warmup_steps)[t]``, then ``end``.

    This is the DINO / DINOv2 schedule: the end value is reached at step
    ``warmup_steps - 1``.
    """
    if t >= warmup_steps:
        return end
    if warmup_steps == 1:
        return start
    return start + (end - start) * t / (warmup_steps - 1)


@HOOKS.register_module()
class TeacherTempWarmupHook(Hook):
    """Set ``model.teacher_temp`` before every iteration.

    Linear from ``warmup_temp`` (0.04) to ``temp`` (0.07) over
    ``warmup_epochs`` (30 in DINO/DINOv2), then constant. With
    ``by_epoch=True`` the value changes once per epoch (DINO); with
    ``by_epoch=False`` per iteration over ``warmup_epochs * iters_per_epoch``
    iterations (DINOv2). Computed from ``runner.epoch`` / ``runner.iter``,
    so exact after a resume; logged as ``teacher_temp``.

    ``warmup_epochs`` may be a run fraction such as ``'30%'`` (resolved by
    ``SSLRunner``, see :mod:`mmssl.config.run_length`); fractional
    epochs become whole iterations as every schedule point does
    (:func:`~mmssl.config.run_length.boundary`). In an
    iteration-based loop use ``warmup_iters`` (a fraction of ``max_iters``
    becomes that).

    Args:
        warmup_temp (float): Start temperature. Defaults to 0.04.
        temp (float): Final temperature. Defaults to 0.07.
        warmup_epochs (int): Warmup length in epochs. Defaults to 30.
        by_epoch (bool): Per-epoch (True) or per-iteration steps.
            Defaults to False.
        warmup_iters (int, optional): Warmup length in iterations; when
            set, it wins over ``warmup_epochs``. Defaults to None.
    """

    priority = 'ABOVE_NORMAL'

    def __init__(
        self,
        warmup_temp: float = 0.04,
        temp: float = 0.07,
        warmup_epochs: float = 30,
        by_epoch: bool = False,
        warmup_iters: Optional[int] = None,
    ) -> None:
        if warmup_temp <= 0 or temp <= 0:
            raise ValueError(
                'Teacher temperatures must be > 0, got '
                f'warmup_temp={warmup_temp}, temp={temp}.'
            )
        if warmup_epochs < 0:
            raise ValueError(
                f'warmup_epochs must be >= 0, got {warmup_epochs}.'
            )
        self.warmup_temp = warmup_temp
        self.temp = temp
        self.warmup_epochs = warmup_epochs
        self.by_epoch = by_epoch
        self.warmup_iters = warmup_iters

    def value(self, runner) -> float:
        """Teacher temperature for the current iteration."""
        if self.warmup_iters is not None:
            return warmup_value(
                runner.iter, self.warmup_iters, self.warmup_temp, self.temp
            )
        if self.by_epoch:
            return warmup_value(
                runner.epoch, self.warmup_epochs, self.warmup_temp, self.temp
            )
        from mmssl.config.run_length import boundary

        iters_per_epoch = len(runner.train_dataloader)
        return warmup_value(
            runner.iter,
            boundary(
                self.warmup_epochs * iters_per_epoch,
                getattr(runner, 'max_iters', None),
            ),
            self.warmup_temp,
            self.temp,
        )

    def before_train_iter(
        self, runner, batch_idx: int, data_batch: Optional[dict] = None
    ) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        value = self.value(runner)
        model.teacher_temp = value
        runner.message_hub.update_scalar('train/teacher_temp', value)
