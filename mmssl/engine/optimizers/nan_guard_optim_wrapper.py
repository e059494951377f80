"""Optimiser wrappers that skip steps with a non-finite loss."""

from typing import Dict, Optional, Union

import torch
from mmengine.dist import all_reduce
from mmengine.logging import MessageHub, MMLogger
from mmengine.optim import AmpOptimWrapper, OptimWrapper

from mmssl.registry import OPTIM_WRAPPERS

from .clip_scope import check_scope, clip_groups
from .cpu_amp_optim_wrapper import CPUAmpOptimWrapper


def _pop_clip_scope(kwargs: dict) -> str:
    """Take ``scope`` out of ``kwargs['clip_grad']`` (mmengine passes the
    rest to the clip function); ``'global'`` when unset."""
    clip = kwargs.get('clip_grad')
    if not clip or 'scope' not in clip:
        return 'global'
    clip = dict(clip)
    scope = check_scope(clip.pop('scope'))
    kwargs['clip_grad'] = clip
    return scope


class NaNGuardMixin:
    """Skip the update when the loss is NaN/inf on any rank.

    Every rank all-reduces a "non-finite" flag, so all ranks skip together
    (no rank waits for the others in a collective). On a skip the backward
    pass still runs (so DDP's gradient reduction stays in step on every
    rank, whatever ``find_unused_parameters`` is), the optimiser leaves
    parameters and state as they were, and ``TeacherEMAHook`` leaves the
    teacher alone. Skips are logged (with the consecutive and total
    counts, also as the ``nan_skips`` scalar); after
    ``max_consecutive_skips`` consecutive skips a ``RuntimeError`` stops
    training.

    Two ways to decide, chosen from the optimiser:

    - on the device, with an optimiser that takes a ``found_inf`` flag
      (torch's fused Adam, AdamW, SGD, which
      ``LayerDecayOptimWrapperConstructor`` picks where torch has them):
      the flag goes to the fused kernel (through the loss scaler's own
      inf check under AMP), which skips the update; the counts are
      device tensors (``skip_flag`` is this step's), read by the host
      only every ``log_interval`` iterations (the logger's, set by
      ``LogIntervalHook``), where the warning, the ``nan_skips`` and
      ``grad_norm`` scalars and the stop happen. No host sync in the
      step;
    - on the host otherwise (one sync per step): the step is not called.
    """

    def _init_guard(
        self, max_consecutive_skips: int, log_interval: int = 1
    ) -> None:
        if max_consecutive_skips < 1:
            raise ValueError(
                'max_consecutive_skips must be >= 1, got '
                f'{max_consecutive_skips}.'
            )
        self.max_consecutive_skips = max_consecutive_skips
        #: the host reads the device counts every ``log_interval`` steps
        self.log_interval = max(int(log_interval), 1)
        self._consecutive: Union[int, torch.Tensor] = 0
        self._total: Union[int, torch.Tensor] = 0
        self._worst: Union[int, torch.Tensor] = 0  # streak since last read
        self._skipped: Union[bool, torch.Tensor] = False
        self._pending: Optional[torch.Tensor] = None  # accumulation
        self._grad_norm: Optional[torch.Tensor] = None
        self._module_norms: Dict[str, torch.Tensor] = {}
        self._reported_total = 0
        self._calls = 0

    # host views of the counts (reading a device count syncs)
    @property
    def consecutive_skips(self) -> int:
        return int(self._consecutive)

    @property
    def total_skips(self) -> int:
        return int(self._total)

    @property
    def last_step_skipped(self) -> bool:
        return bool(self._skipped)

    @property
    def skip_flag(self) -> Optional[torch.Tensor]:
        """This step's skip as a device 0-dim float (1.0: skipped), or
        None when the guard decides on the host."""
        return self._skipped if torch.is_tensor(self._skipped) else None

    def _nonfinite_flag(self, loss: torch.Tensor) -> torch.Tensor:
        """(1,) float on the loss's device: > 0 when any rank's loss is
        not finite."""
        flag = (~torch.isfinite(loss.detach())).any().float().reshape(1)
        all_reduce(flag)  # sum over ranks; no-op when not distributed
        return flag

    def _loss_is_finite(self, loss: torch.Tensor) -> bool:
        return bool(self._nonfinite_flag(loss).item() == 0)

    def _decides_on_device(self) -> bool:
        return bool(getattr(self.optimizer, '_step_supports_amp_scaling', 0))

    def _step_unless(self, flag: torch.Tensor, **step_kwargs) -> None:
        """Optimiser step that the fused kernel skips where ``flag`` is 1.

        With an enabled loss scaler (``AmpOptimWrapper``) the flag joins
        the scaler's own inf check after unscaling, so the scaler skips
        the step (and lowers the scale, as for inf gradients)."""
        scaler = getattr(self, 'loss_scaler', None)
        if scaler is None or not scaler.is_enabled():
            self.optimizer.found_inf = flag
            try:
                return self.step(**step_kwargs)
            finally:
                del self.optimizer.found_inf
        scaler.unscale_(self.optimizer)
        state = scaler._per_optimizer_states[id(self.optimizer)]
        for found in state['found_inf_per_device'].values():
            # the fused kernels skip where found_inf == 1 (not > 0)
            torch.maximum(found, flag.to(found), out=found)
        if self.clip_grad_kwargs:
            self._clip_grad()
        scaler.step(self.optimizer, **step_kwargs)
        scaler.update(getattr(self, '_scale_update_param', None))

    def _clip_grad(self) -> None:
        """Clip by ``clip_grad.scope``; with a fused optimiser keep the
        norms on the device (published at log time)."""
        scope = getattr(self, 'clip_scope', 'global')
        on_device = self._decides_on_device()
        if scope == 'global' and not on_device:
            return super()._clip_grad()
        if getattr(self, 'grad_name', 'grad_norm') != 'grad_norm':
            return super()._clip_grad()  # clip by value: no norm, no scope
        groups = clip_groups(self.optimizer, scope)
        norms = {}
        for key, params in groups.items():
            norm = self.clip_func(params, **self.clip_grad_kwargs)
            if hasattr(norm, 'full_tensor'):  # DTensor under FSDP2
                norm = norm.full_tensor()
            norms[key] = norm.detach()
        if not norms:
            return
        # the norm before clipping over all parameters, from the groups'
        total = torch.stack(list(norms.values())).norm()
        self._grad_norm = total
        self._module_norms = norms if scope == 'module' else {}
        if not on_device:  # the host path syncs anyway
            self._publish_norms()

    def _publish_norms(self) -> None:
        hub = MessageHub.get_current_instance()
        values = [self._grad_norm, *self._module_norms.values()]
        total, *each = torch.stack(values).tolist()
        hub.update_scalar(f'train/{self.grad_name}', total)
        for key, value in zip(self._module_norms, each):
            hub.update_scalar(f'train/{self.grad_name}_{key}', value)

    def update_params(
        self,
        loss: torch.Tensor,
        step_kwargs: Optional[Dict] = None,
        zero_kwargs: Optional[Dict] = None,
    ) -> None:
        if self._decides_on_device():
            return self._update_on_device(loss, step_kwargs, zero_kwargs)
        finite = self._loss_is_finite(loss)
        message_hub = MessageHub.get_current_instance()
        if finite:
            self._skipped = False
            self._consecutive = 0
            super().update_params(loss, step_kwargs, zero_kwargs)
            message_hub.update_scalar('train/nan_skips', self._total)
            return
        self._skipped = True
        self._consecutive += 1
        self._total += 1
        message_hub.update_scalar('train/nan_skips', self._total)
        # Keep DDP in step: every rank runs the backward it expects, then
        # the (non-finite) gradients are thrown away.
        self.backward(loss)
        self.zero_grad(**(zero_kwargs or {}))
        MMLogger.get_current_instance().warning(
            f'Non-finite loss ({loss.detach().float().item()}) on at least '
            f'one rank: optimiser step and teacher update skipped '
            f'({self._consecutive} in a row, {self._total} in '
            'total).'
        )
        self._stop_if(self._consecutive)

    def _update_on_device(self, loss, step_kwargs, zero_kwargs) -> None:
        """Backward, then a step the fused kernel skips on a non-finite
        loss; counts stay on the device (see the class doc)."""
        bad = (self._nonfinite_flag(loss) > 0).float().reshape(())
        pending = bad if self._pending is None else self._pending.max(bad)
        self.backward(self.scale_loss(loss))
        if not self.should_update():
            self._pending = pending
            return
        self._pending = None
        self._step_unless(pending, **(step_kwargs or {}))
        self.zero_grad(**(zero_kwargs or {}))
        if not torch.is_tensor(self._total):
            zero = torch.zeros((), device=pending.device)
            self._consecutive, self._total, self._worst = zero, zero, zero
        self._skipped = pending
        self._consecutive = (self._consecutive + pending) * pending
        self._total = self._total + pending
        self._worst = torch.maximum(self._worst, self._consecutive)
        self._calls += 1
        it = MessageHub.get_current_instance().get_info('iter')
        it = self._calls - 1 if it is None else it
        if (it + 1) % self.log_interval == 0:
            self.report()

    def report(self) -> None:
        """Read the device counts (one sync): publish ``nan_skips`` and
        ``grad_norm``, warn about new skips, stop after too many in a
        row. Called every ``log_interval`` steps."""
        hub = MessageHub.get_current_instance()
        if not torch.is_tensor(self._total):
            return
        values = [self._total, self._worst]
        if self._grad_norm is not None:
            values.append(self._grad_norm.to(self._total))
        total, worst, *norm = torch.stack(values).tolist()  # the one sync
        total, worst = int(total), int(worst)
        self._worst = torch.zeros_like(self._worst)
        if norm:
            hub.update_scalar(f'train/{self.grad_name}', norm[0])
        if norm and getattr(self, '_module_norms', None):
            self._publish_norms()
        hub.update_scalar('train/nan_skips', total)
        if total > self._reported_total:
            MMLogger.get_current_instance().warning(
                f'Non-finite loss on at least one rank in '
                f'{total - self._reported_total} of the last '
                f'{self.log_interval} steps: those optimiser steps and '
                f'teacher updates skipped (up to {worst} in a row, {total} '
                'in total).'
            )
            self._reported_total = total
        self._stop_if(worst)

    def _stop_if(self, consecutive: int) -> None:
        if consecutive >= self.max_consecutive_skips:
            raise RuntimeError(
                f'The loss was non-finite for {consecutive} '
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
        log_interval (int): With a fused optimiser, read the device skip
            counts and the gradient norm every this many steps (the
            runner sets the logger's interval). Defaults to 1.
        **kwargs: ``OptimWrapper`` arguments (``optimizer``, ``clip_grad``,
            ``accumulative_counts``). ``clip_grad`` may hold ``scope``:
            ``'global'`` (default: one norm over all parameters),
            ``'module'`` (each top-level student module on its own,
            logged as ``grad_norm_<module>``: dinov2 / dinov3) or
            ``'tensor'`` (each parameter tensor on its own: DINO v1's
            ``clip_gradients``). ``grad_norm`` is the norm before
            clipping over all parameters.
    """

    def __init__(
        self,
        max_consecutive_skips: int = 10,
        log_interval: int = 1,
        **kwargs,
    ) -> None:
        self.clip_scope = _pop_clip_scope(kwargs)
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips, log_interval)


@OPTIM_WRAPPERS.register_module()
class NaNGuardAmpOptimWrapper(NaNGuardMixin, AmpOptimWrapper):
    """``AmpOptimWrapper`` that skips non-finite-loss steps (see
    :class:`NaNGuardOptimWrapper`); ``tools/train.py --amp`` should select it
    when the config uses ``NaNGuardOptimWrapper``."""

    def __init__(
        self,
        max_consecutive_skips: int = 10,
        log_interval: int = 1,
        **kwargs,
    ) -> None:
        self.clip_scope = _pop_clip_scope(kwargs)
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips, log_interval)


@OPTIM_WRAPPERS.register_module()
class NaNGuardCPUAmpOptimWrapper(NaNGuardMixin, CPUAmpOptimWrapper):
    """:class:`CPUAmpOptimWrapper` (bfloat16 autocast on the CPU) that skips
    non-finite-loss steps (see :class:`NaNGuardOptimWrapper`);
    ``tools/train.py --amp`` selects it for a ``NaNGuardOptimWrapper``
    config on a machine without CUDA."""

    def __init__(
        self,
        max_consecutive_skips: int = 10,
        log_interval: int = 1,
        **kwargs,
    ) -> None:
        self.clip_scope = _pop_clip_scope(kwargs)
        super().__init__(**kwargs)
        self._init_guard(max_consecutive_skips, log_interval)
