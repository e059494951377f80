# Copyright (c) mmssl contributors. All rights reserved.
"""The phases of one DINOv2 step, on mmssl's side and the reference's,
and a count of the kernels each phase launches.

``label_mmssl`` and ``label_reference`` wrap the methods of the two steps
of :mod:`mmssl_dev.speed_vs_reference` (teacher and student backbone
and head, Sinkhorn-Knopp, the DINO, iBOT and KoLeo losses, gradient
clipping, EMA) with a context per phase: ``torch.profiler``'s
``record_function`` in ``.dev_scripts/profile_step.py``, a phase stack for
:class:`KernelCounter`. A ViT-S step at batch 32 on an H100/H200 runs at
a few percent of the card's peak: it waits on kernel launches, so their
number, which the CPU counts exactly, is what to bring down there.
"""

import collections
import contextlib
import functools
from typing import Callable, ContextManager, Dict, List

import torch
from torch.utils._python_dispatch import TorchDispatchMode

#: A label: ``(obj, attr, name)`` wraps ``obj.attr`` in a phase ``name``.
Label = Callable[[object, str, str], None]

#: aten ops that launch no kernel on a GPU (views, bookkeeping).
NO_KERNEL = frozenset(
    'alias as_strided detach expand lift_fresh permute select slice split '
    'split_with_sizes squeeze t transpose unbind unsqueeze view '
    '_unsafe_view _reshape_alias _record_function_enter_new '
    '_record_function_exit'.split()
)


def wrapper_label(enter: Callable[[str], ContextManager]) -> Label:
    """A :data:`Label` that runs the wrapped method inside
    ``enter(name)``."""

    def label(obj, attr: str, name: str) -> None:
        fn = getattr(obj, attr)

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with enter(name):
                return fn(*args, **kwargs)

        setattr(obj, attr, wrapped)

    return label


def label_mmssl(model, wrapper, label: Label) -> None:
    """Phases of mmssl's DINOv2 step (``model``, its optim wrapper)."""
    for attr in ('forward', 'forward_packed'):
        label(model.teacher['backbone'], attr, 'teacher backbone')
        label(model.backbone, attr, 'student backbone')
    label(model.teacher['head'], 'forward', 'teacher head')
    label(model.head, 'forward', 'student head')
    for loss in (model.dino_loss, model.ibot_loss):
        label(loss, 'teacher_targets', 'sinkhorn-knopp')
    label(model.dino_loss, 'forward', 'dino loss (incl. sinkhorn)')
    label(model.ibot_loss, 'forward', 'ibot loss (incl. sinkhorn)')
    label(model.koleo_loss, 'forward', 'koleo loss')
    label(wrapper, '_clip_grad', 'clip grad')
    label(model, 'update_teacher', 'ema')


def label_reference(step, label: Label) -> None:
    """Phases of the reference's DINOv2 step
    (:class:`~mmssl_dev.reference_dinov2.ReferenceStep`)."""
    for side in ('teacher', 'student'):
        for part in ('backbone', 'head'):
            label(step.__dict__[side][part], 'forward', f'{side} {part}')
    for loss in (step.dino_loss, step.ibot_loss):
        label(loss, 'sinkhorn_knopp_teacher', 'sinkhorn-knopp')
    label(step.dino_loss, 'forward', 'dino loss')
    label(step.ibot_loss, 'forward_masked', 'ibot loss')
    label(step.koleo, 'forward', 'koleo loss')
    label(torch.nn.utils, 'clip_grad_norm_', 'clip grad')


class KernelCounter(TorchDispatchMode):
    """Counts the aten ops that launch a kernel (not :data:`NO_KERNEL`,
    not views), per phase: the innermost phase entered with
    :meth:`phase` (``'other'`` outside all), ``'backward pass'`` for what
    autograd runs."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: List[str] = ['other']
        self.counts: Dict[str, collections.Counter] = collections.defaultdict(
            collections.Counter
        )

    @contextlib.contextmanager
    def phase(self, name: str):
        self.stack.append(name)
        try:
            yield
        finally:
            self.stack.pop()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name not in NO_KERNEL and not func.is_view:
            where = self.stack[-1]
            if torch._C._current_graph_task_id() != -1:
                where = 'backward pass'
            self.counts[where][name] += 1
        return func(*args, **(kwargs or {}))

    def totals(self) -> Dict[str, int]:
        """Kernels per phase."""
        return {k: sum(v.values()) for k, v in self.counts.items()}


__all__ = [
    'KernelCounter',
    'NO_KERNEL',
    'label_mmssl',
    'label_reference',
    'wrapper_label',
]
