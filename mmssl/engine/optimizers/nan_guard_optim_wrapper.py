"""Optimiser wrappers that skip steps with a non-finite loss."""

from typing import Dict, Optional

import torch
from mmengine.dist import all_reduce
from mmengine.logging import MessageHub, MMLogger
from mmengine.optim import AmpOptimWrapper, OptimWrapper

from mmssl.registry import OPTIM_WRAPPERS

from .cpu_amp_optim_wrapper import CPUAmpOptimWrapper


class NaNGuardMixin:
    """Skip the update when the loss is NaN/inf on any rank.

    Every rank all-reduces a "non-finite" flag, so all ranks skip together
    (no rank waits for the others in a collective). On a skip the backward
    pass still runs (so DDP's gradient reduction stays in step on every
    rank, whatever ``find_unused_parameters`` is), then the gradients are
    zeroed and ``optimizer.step()`` is not called; ``last_step_skipped`` is
    set so ``TeacherEMAHook`` leaves the teacher alone. Each skip is logged
    (with the consecutive and total counts, also as the ``nan_skips``
    scalar); after ``max_consecutive_skips`` consecutive skips a
    ``RuntimeError`` stops training.
    """

    def _init_guard(self, max_consecutive_skips: int) -> None:
        if max_consecutive_skips < 1:
            raise ValueError(
                'max_consecutive_skips must be >= 1, got '
                f'{max_consecutive_skips}.'
            )
        self.max_consecutive_skips = max_consecutive_skips
        self.consecutive_skips = 0
        self.total_skips = 0
        self.last_step_skipped = False

    def _loss_is_finite(self, loss: torch.Tensor) -> bool:
        flag = (~torch.isfinite(loss.detach())).any().float().reshape(1)
        all_reduce(flag)  # sum over ranks; no-op when not distributed
        return bool(flag.item() == 0)

    def update_params(
        self,
        loss: torch.Tensor,
        step_kwargs: Optional[Dict] = None,
        zero_kwargs: Optional[Dict] = None,
    ) -> None:
        finite = self._loss_is_finite(loss)
        message_hub = MessageHub.get_current_instance()
        if finite:
            self.last_step_skipped = False
            self.consecutive_skips = 0
            super().update_params(loss, step_kwargs, zero_kwargs)
            message_hub.update_scalar('train/nan_skips', self.total_skips)
            return
        self.last_step_skipped = True
        self.consecutive_skips += 1
        self.total_skips += 1
        message_hub.update_scalar('train/nan_skips', self.total_skips)
        # Keep DDP in step: every rank runs the backward it expects, then
        # the (non-finite) gradients are thrown away.
        self.backward(loss)
        self.zero_grad(**(zero_kwargs or {}))
        MMLogger.get_current_instance().warning(
            f'Non-finite loss ({loss.detach().float().item()}) on at least '
            f'one rank: optimiser step and teacher update skipped '
            f'({self.consecutive_skips} in a row, {self.total_skips} in '
            'total).'
        )
        if self.consecutive_skips >= self.max_consecutive_skips:
            raise RuntimeError(
                f'The loss was non-finite for {self.consecutive_skips} '
                f'consecutive iterations (max_consecutive_skips='
                f'{self.max_consecutive_skips}); stopping. Try a lower '
                'learning rate, gradient clipping (optim_wrapper.clip_grad),'
                ' fp32 instead of fp16 (--amp off or bf16), a batch size > 1'
                ' for KoLeo, or check the data for broken images.'
            )


@OPTIM_WRAPPERS.register_module()
class NaNGuardOptimWrapper(NaNGuardMixin, OptimWrapper):
    """``OptimWrapper`` that skips non-finite-loss steps.

    Args:
        max_consecutive_skips (int): Stop after this many skips in a row.
            Defaults to 10.
        **kwargs: ``OptimWrapper`` arguments (``optimizer``, ``clip_grad``,
            ``accumulative_counts``).
    """

    def __init__(self, max_consecutive_skips: int = 10, **kwargs) -> None:
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips)


@OPTIM_WRAPPERS.register_module()
class NaNGuardAmpOptimWrapper(NaNGuardMixin, AmpOptimWrapper):
    """``AmpOptimWrapper`` that skips non-finite-loss steps (see
    :class:`NaNGuardOptimWrapper`); ``tools/train.py --amp`` should select it
    when the config uses ``NaNGuardOptimWrapper``."""

    def __init__(self, max_consecutive_skips: int = 10, **kwargs) -> None:
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips)


@OPTIM_WRAPPERS.register_module()
class NaNGuardCPUAmpOptimWrapper(NaNGuardMixin, CPUAmpOptimWrapper):
    """:class:`CPUAmpOptimWrapper` (bfloat16 autocast on the CPU) that skips
    non-finite-loss steps (see :class:`NaNGuardOptimWrapper`);
    ``tools/train.py --amp`` selects it for a ``NaNGuardOptimWrapper``
    config on a machine without CUDA."""

    def __init__(self, max_consecutive_skips: int = 10, **kwargs) -> None:
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips)
