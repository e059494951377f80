"""Keep the prototype layer of DINO heads fixed at the start of training."""

from typing import Optional, Sequence

from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS


@HOOKS.register_module()
class FreezeLastLayerHook(Hook):
    """Do not update the heads' last (prototype) layer for the first
    ``freeze_epochs`` epochs (DINO: 1), which stabilises early training.

    As in DINO's ``cancel_gradients_last_layer``, the gradients of the
    matching parameters are set to ``None`` just before the optimiser step
    (after gradient clipping), so neither the gradient, the momentum nor
    weight decay changes them. Implemented with an optimiser step pre-hook;
    works with DDP and AMP.

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
    """

    priority = 'NORMAL'

    def __init__(
        self,
        freeze_epochs: float = 1,
        freeze_iters: Optional[int] = None,
        keys: Sequence[str] = ('last_layer',),
    ) -> None:
        self.freeze_epochs = freeze_epochs
        self.freeze_iters = freeze_iters
        self.keys = tuple(keys)
        self.frozen = False
        self._params = []
        self._handle = None

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
        self._handle = optimizer.register_step_pre_hook(self._drop_grads)

    def _drop_grads(self, optimizer, args, kwargs) -> None:
        if self.frozen:
            for p in self._params:
                p.grad = None

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
            self._handle.remove()
            self._handle = None
