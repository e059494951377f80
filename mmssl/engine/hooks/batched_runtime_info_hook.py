"""Read the logged step outputs from the device in one go, or less often."""

from typing import Optional, Union

import torch
from mmengine.hooks import LoggerHook, RuntimeInfoHook

from mmssl.registry import HOOKS


@HOOKS.register_module()
class BatchedRuntimeInfoHook(RuntimeInfoHook):
    """mmengine's ``RuntimeInfoHook`` with one host sync per reading.

    mmengine puts every value of ``train_step``'s outputs (the loss and
    each loss term) into the message hub with its own ``.item()``: one
    CPU-GPU synchronisation per key and iteration. This hook stacks them
    on the device and reads them with one ``tolist()``: every iteration
    (``interval=1``, the same logged values as mmengine), or every
    ``interval`` iterations with the sums of the iterations in between
    (the logger's mean then spans ``window_size`` readings), and at the
    end of each epoch. ``interval='logger'`` takes the logger's interval:
    no sync at all between two log lines. Use it as
    ``default_hooks.runtime_info``.

    Args:
        interval (int | str): Iterations between readings, or
            ``'logger'``. Defaults to 1.
    """

    def __init__(self, interval: Union[int, str] = 1) -> None:
        if interval != 'logger' and int(interval) < 1:
            raise ValueError(f'interval must be >= 1, got {interval!r}.')
        self.interval = interval
        self._keys: Optional[tuple] = None
        self._sum: Optional[torch.Tensor] = None
        self._count = 0

    def before_train(self, runner) -> None:
        super().before_train(runner)
        if self.interval == 'logger':
            loggers = [h for h in runner.hooks if isinstance(h, LoggerHook)]
            self.interval = min((h.interval for h in loggers), default=1)

    def after_train_iter(
        self,
        runner,
        batch_idx: int,
        data_batch=None,
        outputs: Optional[dict] = None,
    ) -> None:
        if not outputs:
            return
        hub = runner.message_hub
        keys = tuple(k for k, v in outputs.items() if torch.is_tensor(v))
        for key, value in outputs.items():  # host values as they are
            if not torch.is_tensor(value):
                hub.update_scalar(f'train/{key}', value)
        if not keys:
            return
        values = torch.stack(
            [outputs[k].detach().float().mean() for k in keys]
        )  # (K,) on the device
        if keys != self._keys or self._sum is None:
            self._flush(hub)
            self._keys, self._sum, self._count = keys, values, 1
        else:
            self._sum = self._sum + values
            self._count += 1
        if (
            self.every_n_train_iters(runner, int(self.interval))
            or self.end_of_epoch(runner.train_dataloader, batch_idx)
            or runner.iter + 1 >= runner.max_iters
        ):
            self._flush(hub)

    def _flush(self, hub) -> None:
        """Read the sums (one sync) into the message hub."""
        if self._sum is None:
            return
        for key, total in zip(self._keys, self._sum.tolist()):
            hub.update_scalar(f'train/{key}', total, count=self._count)
        self._sum, self._count = None, 0
