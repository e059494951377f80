"""Schedules of loss-term weights (DINOv3's Gram and local DINO weights)."""

import math
from typing import Optional, Union

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS

Point = Union[int, float]


@HOOKS.register_module()
class LossWeightScheduleHook(Hook):
    """Set ``model.loss_weights[key]`` before every iteration.

    The weight is ``start`` up to iteration ``begin``, moves to ``end``
    until iteration ``end_iter`` (linearly, or along a half cosine), and
    stays at ``end`` afterwards. ``begin`` and ``end_iter`` given as floats
    in [0, 1] are fractions of the run (``runner.max_iters``), so one
    ``max_epochs`` moves them. DINOv3 (https://arxiv.org/abs/2508.10104)
    uses it for the ``gram`` term weight and for ``dino_local``, the factor
    of the local-crop pairs of the DINO loss. The value is computed from
    ``runner.iter``, so it is exact after a resume; logged as
    ``loss_weight_<key>``.

    Args:
        key (str): Key of ``model.loss_weights`` (e.g. ``'gram'``,
            ``'dino_local'``).
        start (float): Value up to ``begin``.
        end (float): Value from ``end_iter`` on.
        begin (int | float): First iteration of the ramp. Defaults to 0.
        end_iter (int | float): Iteration where ``end`` is reached.
            Defaults to 1.0 (the end of the run).
        mode (str): ``'linear'`` or ``'cosine'``. Defaults to 'linear'.
    """

    priority = 'ABOVE_NORMAL'

    def __init__(
        self,
        key: str,
        start: float,
        end: float,
        begin: Point = 0,
        end_iter: Point = 1.0,
        mode: str = 'linear',
    ) -> None:
        if mode not in ('linear', 'cosine'):
            raise ValueError(f"mode must be 'linear' or 'cosine', got {mode}.")
        self.key = key
        self.start, self.end = float(start), float(end)
        self.begin, self.end_iter = begin, end_iter
        self.mode = mode

    @staticmethod
    def _iters(point: Point, max_iters: int) -> int:
        if isinstance(point, float):
            return int(round(point * max_iters))
        return int(point)

    def value(self, it: int, max_iters: int) -> float:
        """The weight at iteration ``it`` of a run of ``max_iters``."""
        lo = self._iters(self.begin, max_iters)
        hi = self._iters(self.end_iter, max_iters)
        if it <= lo:
            return self.start
        if it >= hi:
            return self.end
        t = (it - lo) / (hi - lo)
        if self.mode == 'cosine':
            t = (1.0 - math.cos(math.pi * t)) / 2.0
        return self.start + (self.end - self.start) * t

    def before_train_iter(
        self, runner, batch_idx: int, data_batch: Optional[dict] = None
    ) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        weights = getattr(model, 'loss_weights', None)
        if weights is None:
            raise TypeError(
                f'{type(model).__name__} has no loss_weights to schedule.'
            )
        if self.key not in weights and self.key != 'dino_local':
            raise KeyError(
                f'loss_weights has no {self.key!r}; it has {sorted(weights)}.'
            )
        value = self.value(runner.iter, runner.max_iters)
        weights[self.key] = value
        runner.message_hub.update_scalar(
            f'train/loss_weight_{self.key}', value
        )
