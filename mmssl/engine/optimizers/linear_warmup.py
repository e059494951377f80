"""Linear warm-up that may start at 0, as DINO / DINOv2 warm up."""

from mmengine.optim.scheduler.lr_scheduler import LRSchedulerMixin
from mmengine.optim.scheduler.param_scheduler import INF, _ParamScheduler

from mmssl.registry import PARAM_SCHEDULERS


@PARAM_SCHEDULERS.register_module()
class LinearWarmupParamScheduler(_ParamScheduler):
    """``np.linspace(start_factor * v, v, end - begin)``, closed form.

    The warm-up of DINO (Caron et al., 2021) and DINOv2 (Oquab et al.,
    2023, ``CosineScheduler``): from ``start_factor`` times each group's
    initial value at ``begin`` to the value itself at ``end - 1``. Unlike
    mmengine's chainable ``LinearParamScheduler`` (which multiplies the
    current value step by step), ``start_factor=0`` works, as the
    references start their lr warm-up at 0.

    Args:
        optimizer (OptimWrapper | Optimizer): The optimizer.
        param_name (str): The scheduled group key (``lr``, ...).
        start_factor (float): Factor of the first step, in [0, 1].
            Defaults to 0.
        begin (int): First step. Defaults to 0.
        end (int): One past the last step. Defaults to INF.
        last_step (int): As in mmengine. Defaults to -1.
        by_epoch (bool): Steps are epochs. Defaults to True.
        verbose (bool): Print each value. Defaults to False.
    """

    def __init__(
        self,
        optimizer,
        param_name: str,
        start_factor: float = 0.0,
        begin: int = 0,
        end: int = INF,
        last_step: int = -1,
        by_epoch: bool = True,
        verbose: bool = False,
    ) -> None:
        if not 0.0 <= start_factor <= 1.0:
            raise ValueError(
                f'start_factor must be in [0, 1], got {start_factor}.'
            )
        self.start_factor = start_factor
        super().__init__(
            optimizer,
            param_name=param_name,
            begin=begin,
            end=end,
            last_step=last_step,
            by_epoch=by_epoch,
            verbose=verbose,
        )

    @classmethod
    def build_iter_from_epoch(
        cls, *args, begin=0, end=INF, by_epoch=True, epoch_length=None, **kw
    ):
        """An iteration-based instance from an epoch-based config."""
        if not by_epoch or not epoch_length:
            raise ValueError('Needs by_epoch=True and an epoch_length > 0.')
        begin = int(begin * epoch_length)
        if end != INF:
            end = int(end * epoch_length)
        return cls(*args, begin=begin, end=end, by_epoch=False, **kw)

    def _get_value(self):
        steps = self.end - self.begin - 1
        frac = min(self.last_step / steps, 1.0) if steps > 0 else 0.0
        factor = self.start_factor + (1.0 - self.start_factor) * frac
        return [base * factor for base in self.base_values]


@PARAM_SCHEDULERS.register_module()
class LinearWarmupLR(LRSchedulerMixin, LinearWarmupParamScheduler):
    """:class:`LinearWarmupParamScheduler` of the learning rate."""
