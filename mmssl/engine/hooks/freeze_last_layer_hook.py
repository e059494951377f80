"""Keep the prototype layer of DINO heads fixed at the start of training."""

from typing import Optional, Sequence

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS

#: ``FreezeLastLayerHook.mode`` values
MODES = ('zero_lr', 'drop_grad')


@HOOKS.register_module()
class FreezeLastLayerHook(Hook):
    """Do not update the heads' last (prototype) layer for the first
    ``freeze_epochs`` epochs (DINO: 1), which stabilises early training.

    Two ways, as the references do it:

    - ``mode='zero_lr'`` (dinov2 / dinov3's ``last_layer_lr`` schedule, the
      default): the learning rate of the parameter groups that hold the
      frozen parameters is 0 in the optimiser step; the gradients stay,
      so AdamW's moments and step count accumulate and the first step
      after the freeze uses them. Those groups must hold nothing else
      (``paramwise_cfg.decay_rule='dinov2'`` keeps them apart);
    - ``mode='drop_grad'`` (DINO v1 and iBOT's
      ``cancel_gradients_last_layer``): the gradients are set to ``None``
      just before the step (after gradient clipping), so neither the
      gradient, the moments nor weight decay change them.

    Implemented with optimiser step pre- (and post-) hooks; works with DDP
    and AMP, and leaves the param schedulers' values alone.

    ``freeze_epochs`` may be fractional (e.g. resolved from a run fraction
    such as ``'1%'`` by ``SSLRunner``): the parameters are frozen for
    ``freeze_epochs * iterations per epoch`` iterations, placed like every
    schedule point (:func:`mmssl.config.run_length.boundary`:
    rounded, at least one iteration in a run of two or more, none in a
    1-iteration run).

    Args:
        freeze_epochs (float): Epochs to freeze. Defaults to 1.
        freeze_iters (int, optional): Freeze by iterations instead (for
            iteration-based loops). Defaults to None.
        keys (Sequence[str]): Parameter-name substrings to freeze.
            Defaults to ``('last_layer',)`` (``DINOHead.last_layer``);
            teacher parameters are never touched.
        mode (str): ``'zero_lr'`` or ``'drop_grad'`` (see above).
            Defaults to ``'zero_lr'``.
    """

    priority = 'NORMAL'

    def __init__(
        self,
        freeze_epochs: float = 1,
        freeze_iters: Optional[int] = None,
        keys: Sequence[str] = ('last_layer',),
        mode: str = 'zero_lr',
    ) -> None:
        if mode not in MODES:
            raise ValueError(
                f'FreezeLastLayerHook mode must be one of {MODES}, got '
                f"{mode!r}: 'zero_lr' as dinov2/dinov3, 'drop_grad' as "
                'DINO v1.'
            )
        self.mode = mode
        self.freeze_epochs = freeze_epochs
        self.freeze_iters = freeze_iters
        self.keys = tuple(keys)
        self.frozen = False
        self._params = []
        self._handle = None
        self._groups = []
        self._saved_lrs = []

    def before_train(self, runner) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else runner.model
        )
        self._params = [
            p
            for name, p in model.named_parameters()
            if p.requires_grad
            and not name.startswith('teacher.')
            and any(k in name for k in self.keys)
        ]
        if not self._params:
            raise ValueError(
                f'FreezeLastLayerHook found no trainable '
                f'parameter whose name contains {self.keys}.'
            )
        optimizer = runner.optim_wrapper.optimizer
        if self.mode == 'drop_grad':
            self._handle = optimizer.register_step_pre_hook(self._drop_grads)
            return
        self._groups = self._frozen_groups(optimizer)
        self._handle = (
            optimizer.register_step_pre_hook(self._zero_lr),
            optimizer.register_step_post_hook(self._restore_lr),
        )

    def _frozen_groups(self, optimizer) -> list:
        """The param groups of the frozen parameters; each must hold
        only frozen ones."""
        ids = {id(p) for p in self._params}
        groups = []
        for group in optimizer.param_groups:
            hits = [id(p) in ids for p in group['params']]
            if any(hits) and not all(hits):
                raise ValueError(
                    "FreezeLastLayerHook(mode='zero_lr') needs the frozen "
                    f'parameters ({self.keys}) in param groups of their '
                    "own: set optim_wrapper.paramwise_cfg.decay_rule='dinov2'"
                    ' (LayerDecayOptimWrapperConstructor), or use '
                    "mode='drop_grad'."
                )
            if any(hits):
                groups.append(group)
        return groups

    def _drop_grads(self, optimizer, args, kwargs) -> None:
        if self.frozen:
            for p in self._params:
                p.grad = None

    def _zero_lr(self, optimizer, args, kwargs) -> None:
        self._saved_lrs = []
        if self.frozen:
            self._saved_lrs = [g['lr'] for g in self._groups]
            for group in self._groups:
                group['lr'] = 0.0

    def _restore_lr(self, optimizer, args, kwargs) -> None:
        for group, lr in zip(self._groups, self._saved_lrs):
            group['lr'] = lr
        self._saved_lrs = []

    def is_frozen(self, runner) -> bool:
        if self.freeze_iters is not None:
            return runner.iter < self.freeze_iters
        if float(self.freeze_epochs).is_integer():
            return runner.epoch < self.freeze_epochs
        from mmssl.config.run_length import boundary

        steps = boundary(
            self.freeze_epochs * len(runner.train_dataloader),
            getattr(runner, 'max_iters', None),
        )
        return runner.iter < steps

    def before_train_iter(
        self, runner, batch_idx: int, data_batch: Optional[dict] = None
    ) -> None:
        self.frozen = self.is_frozen(runner)

    def after_train(self, runner) -> None:
        if self._handle is not None:
            handles = self._handle
            for handle in handles if isinstance(handles, tuple) else [handles]:
                handle.remove()
            self._handle = None
