"""Log the mean of the losses over all ranks, not rank 0's alone."""

from typing import Optional

import torch
from mmengine.dist import all_gather_object, all_reduce, get_world_size
from mmengine.hooks import Hook

from mmssl.registry import HOOKS


@HOOKS.register_module()
class DistLossAverageHook(Hook):
    """Average the logged training outputs over all processes.

    mmengine logs the ``outputs`` of ``train_step`` (the loss dict after
    ``parse_losses``) as seen by rank 0, so with several processes the
    log shows one rank's noisy values. This hook runs before
    :class:`~mmengine.hooks.RuntimeInfoHook` (priority ``'HIGHEST'``) and
    replaces every value in ``outputs`` by its mean over ranks, using one
    ``all_reduce`` per iteration. Gradients are untouched (DDP already
    averages them); only what is logged changes. Without distribution it
    does nothing.

    Args:
        interval (int): Average every ``interval`` iterations (the logger
            reads the values every iteration for its smoothing window, so
            keep 1 unless communication cost matters). Defaults to 1.
    """

    priority = 'HIGHEST'

    def __init__(self, interval: int = 1) -> None:
        self.interval = interval
        self._checked_keys = False

    def after_train_iter(
        self,
        runner,
        batch_idx: int,
        data_batch=None,
        outputs: Optional[dict] = None,
    ) -> None:
        """Replace ``outputs`` values by their mean over ranks in place."""
        if not outputs or get_world_size() == 1:
            return
        if not self.every_n_train_iters(runner, self.interval):
            return
        keys = sorted(outputs)
        if not self._checked_keys:
            all_keys = all_gather_object(keys)
            if any(k != keys for k in all_keys):
                raise RuntimeError(
                    'Ranks log different output keys, cannot average '
                    f'them: {all_keys}. Make train_step return the same '
                    'loss names on every rank.'
                )
            self._checked_keys = True
        device = None
        for key in keys:
            if isinstance(outputs[key], torch.Tensor):
                device = outputs[key].device
                break
        values = torch.stack(
            [
                torch.as_tensor(outputs[k], device=device)
                .detach()
                .float()
                .mean()
                for k in keys
            ]
        )  # (K, )
        all_reduce(values, op='mean')
        for i, key in enumerate(keys):
            outputs[key] = values[i]
