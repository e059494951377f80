# Copyright (c) mmssl contributors. All rights reserved.
"""Head-only phase, partial unfreezing and an lr ramp after a warm start."""

import re
from typing import List, Optional, Sequence, Union

import torch
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper

from mmssl.registry import HOOKS

_BLOCK = re.compile(r'^(?:layers|blocks)\.(\d+)\.')


@HOOKS.register_module()
class WarmStartHook(Hook):
    """Train the heads alone, then unfreeze the backbone with an lr ramp.

    After ``model.warm_start`` loaded a pretrained backbone, iterations
    ``[s, s + head_iters)`` (``s``: the iteration of the warm start, 0 for
    a new run) update the heads only. From ``s + head_iters`` on, the last
    ``unfreeze`` blocks of the student backbone and its final norm
    (``'all'``: the whole backbone) are trained too, their updates scaled by
    ``min(1, (i - s - head_iters + 1) / ramp_iters)`` at iteration ``i``
    (an lr ramp that leaves the lr schedule and every other parameter
    alone). Backbone parameters outside the unfrozen part never change.

    Mechanics, through optimizer step hooks (works with any optimizer,
    parameter grouping, DDP and AMP): frozen parameters have their
    gradient set to None just before the step (as in
    :class:`FreezeLastLayerHook`, so the clipping norm still counts them);
    ramped parameters are moved back towards their value before the step:
    ``p = p_old + f * (p_new - p_old)``. The EMA teacher follows the
    student, so its backbone stays equal to the loaded one while frozen.

    State: the schedule is a function of ``runner.iter`` and of the
    settings saved in the checkpoint (``warm_start_hook``); a resumed run
    takes the saved ones, so the schedule continues exactly.

    Args:
        head_iters (int, optional): Iterations with the backbone frozen.
        unfreeze (int | str, optional): Last K blocks to train afterwards,
            or ``'all'``.
        ramp_iters (int, optional): Length of the lr ramp (0: none).
        top_keys (Sequence[str]): Top-level backbone modules after the
            blocks, trained with the last blocks. Defaults to
            ``('ln1', 'norm', 'fc_norm')``.

    The first three default to the same keys of ``model.warm_start``
    (then 0, ``'all'``, 0).
    """

    priority = 'NORMAL'

    def __init__(
        self,
        head_iters: Optional[int] = None,
        unfreeze: Union[int, str, None] = None,
        ramp_iters: Optional[int] = None,
        top_keys: Sequence[str] = ('ln1', 'norm', 'fc_norm'),
    ) -> None:
        self.args = dict(
            head_iters=head_iters, unfreeze=unfreeze, ramp_iters=ramp_iters
        )
        self.top_keys = tuple(top_keys)
        self.settings: Optional[dict] = None  # resolved, or from checkpoint
        self.frozen: List[torch.nn.Parameter] = []
        self.ramped: List[torch.nn.Parameter] = []
        self.factor = 1.0
        self._all: List[torch.nn.Parameter] = []
        self._later: List[torch.nn.Parameter] = []
        self._saved: Optional[List[torch.Tensor]] = None
        self._handles: list = []

    # ------------------------------------------------------------ settings
    def _resolve(self, model, start_iter: int) -> dict:
        cfg = dict(getattr(model, 'warm_start', None) or {})
        out = dict(head_iters=0, unfreeze='all', ramp_iters=0)
        out.update({k: cfg[k] for k in out if k in cfg})
        out.update({k: v for k, v in self.args.items() if v is not None})
        unfreeze = out['unfreeze']
        if unfreeze != 'all' and not (
            isinstance(unfreeze, int) and unfreeze >= 0
        ):
            raise ValueError(
                f"unfreeze must be 'all' or an int >= 0, got {unfreeze!r}."
            )
        if out['head_iters'] < 0 or out['ramp_iters'] < 0:
            raise ValueError(f'Negative iterations in {out}.')
        out['start_iter'] = int(start_iter)
        return out

    def _split(self, backbone) -> None:
        """All trainable backbone params, and those unfrozen later."""
        named = [(n, p) for n, p in backbone.named_parameters()]
        named = [(n, p) for n, p in named if p.requires_grad]
        blocks = [int(m.group(1)) for m in map(_BLOCK.match, dict(named)) if m]
        depth = 1 + max(blocks, default=-1)
        unfreeze = self.settings['unfreeze']
        first = 0 if unfreeze == 'all' else depth - unfreeze

        def later(name: str) -> bool:
            if unfreeze == 'all':
                return True
            match = _BLOCK.match(name)
            if match:
                return int(match.group(1)) >= first
            return unfreeze > 0 and name.split('.')[0] in self.top_keys

        self._all = [p for _, p in named]
        self._later = [p for n, p in named if later(n)]

    # --------------------------------------------------------------- hooks
    def before_train(self, runner) -> None:
        model = (
            runner.model.module
            if is_model_wrapper(runner.model)
            else (runner.model)
        )
        if self.settings is None:
            self.settings = self._resolve(model, runner.iter)
        self._split(model.backbone)
        optimizer = runner.optim_wrapper.optimizer
        self._handles = [
            optimizer.register_step_pre_hook(self._pre_step),
            optimizer.register_step_post_hook(self._post_step),
        ]
        print_log(f'WarmStartHook: {self.settings}', logger='current')

    def phase(self, it: int):
        """``(frozen params, ramped params, ramp factor)`` at iteration it."""
        s = self.settings
        done = it - s['start_iter'] - s['head_iters']
        if done < 0:
            return self._all, [], 1.0
        later = {id(p) for p in self._later}
        frozen = [p for p in self._all if id(p) not in later]
        if s['ramp_iters'] and done < s['ramp_iters']:
            return frozen, self._later, (done + 1) / s['ramp_iters']
        return frozen, [], 1.0

    def before_train_iter(self, runner, batch_idx: int, data_batch=None):
        self.frozen, self.ramped, self.factor = self.phase(runner.iter)

    def _pre_step(self, optimizer, args, kwargs) -> None:
        for p in self.frozen:
            p.grad = None
        self._saved = [p.detach().clone() for p in self.ramped] or None

    @torch.no_grad()
    def _post_step(self, optimizer, args, kwargs) -> None:
        if self._saved is None:
            return
        for p, old in zip(self.ramped, self._saved):
            p.copy_(old.lerp_(p, self.factor))  # old + f * (new - old)
        self._saved = None

    def after_train(self, runner) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint['warm_start_hook'] = dict(self.settings or {})

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        saved = checkpoint.get('warm_start_hook')
        if saved:
            self.settings = dict(saved)
