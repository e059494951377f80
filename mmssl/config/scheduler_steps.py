"""Param schedulers in whole steps, once the data (epoch length) is known.

:func:`schedulers_for_run` is what :meth:`SSLRunner.build_param_scheduler`
applies before mmengine builds the schedulers. It does three things that
matter in short runs (``--max-iters 3``, ``--max-epochs 1`` on small
data), where mmengine alone gives a wrong learning rate:

* **Fractional epochs** (a ``'10%'`` warm-up of 2 epochs is 0.2 epochs)
  become iterations with :func:`~.run_length.boundary`: rounded, but a
  point inside the run stays inside it (mmengine's ``int(x * epoch
  length)`` makes a 0.1-epoch warm-up of a 7-iteration epoch 0 iterations
  long and fails).
* **Empty phases** (``end <= begin``, a warm-up of a 1-iteration run) are
  dropped, with a note: the run trains in the phases that remain.
* **One-step linear and constant ramps.** mmengine's ``LinearLR`` and
  ``ConstantLR`` (and their momentum and generic forms) are chainable:
  at their first step they multiply the value by ``start_factor`` /
  ``factor`` and only their last step undoes it. Over a single step
  (``end = begin + 1``) they never undo it, so a one-iteration warm-up
  left the lr at ``start_factor`` times the base lr for the whole run.
  Such a scheduler gets one more step (``end = begin + 2``): the step
  after the ramp is back at the end factor, where the next phase begins.
"""

from typing import Any, List, Tuple

from mmengine.optim.scheduler.param_scheduler import (
    ConstantParamScheduler,
    LinearParamScheduler,
)
from mmengine.registry import PARAM_SCHEDULERS

from .run_length import boundary

_FIELDS = ('begin', 'end', 'T_max')
_INF = float('inf')


def _is_ramp(sched: dict) -> bool:
    """Whether ``sched`` is a chainable linear or constant scheduler."""
    kind = sched.get('type')
    if isinstance(kind, str):
        kind = PARAM_SCHEDULERS.get(kind.split('.')[-1])
    return isinstance(kind, type) and issubclass(
        kind, (LinearParamScheduler, ConstantParamScheduler)
    )


def _is_open(value: Any) -> bool:
    return value is None or value == _INF or value >= 1e30


def _to_iters(sched: dict, epoch_length: int, total: int) -> dict:
    """A ``convert_to_iter_based`` scheduler in iterations (see module)."""
    out = dict(sched, by_epoch=False)
    out.pop('convert_to_iter_based')
    for key in _FIELDS:
        value = out.get(key)
        if not isinstance(value, (int, float)) or _is_open(value):
            continue
        if key == 'T_max':  # a length
            out[key] = max(1, int(round(value * epoch_length)))
        else:
            out[key] = boundary(value * epoch_length, total)
    return out


def _needs_own_conversion(sched: dict) -> bool:
    """Fractional epochs, or a ramp (whose only epoch fields are begin and
    end); other whole-epoch schedulers are left to mmengine, which also
    converts their own fields (milestones, ...)."""
    if not (
        sched.get('convert_to_iter_based', False)
        and sched.get('by_epoch', True)
    ):
        return False
    values = [sched.get(k) for k in _FIELDS]
    fractional = any(
        isinstance(v, float) and not _is_open(v) and not v.is_integer()
        for v in values
    )
    return fractional or _is_ramp(sched)


def _one(sched: dict, epoch_length: int, total: int, notes: List[str]) -> Any:
    """One scheduler dict in steps; None when it is dropped."""
    name = sched.get('type')
    if _needs_own_conversion(sched):
        sched = _to_iters(sched, epoch_length, total)
    begin, end = sched.get('begin', 0), sched.get('end')
    if _is_open(end) or not isinstance(begin, (int, float)):
        return sched
    unit = 'epoch' if sched.get('by_epoch', True) else 'iteration'
    if sched.get('convert_to_iter_based', False):
        return sched  # whole epochs, converted exactly by mmengine
    if end <= begin:
        notes.append(
            f'{name} [{begin}, {end}) is empty in this run of {total} '
            f'iterations: dropped'
        )
        return None
    if end - begin == 1 and _is_ramp(sched):
        sched = dict(sched, end=begin + 2)
        notes.append(
            f'{name} over one {unit} ({unit} {begin}) is made two long '
            f'({begin} -> {begin + 2}): a one-step {name} would keep its '
            'start factor for the whole run; now the value is back to full '
            f'at {unit} {begin + 1}'
        )
    return sched


def schedulers_for_run(
    scheduler: Any, epoch_length: int, total_iters: int
) -> Tuple[Any, List[str]]:
    """Param scheduler configs ready for a run (see the module docstring).

    Args:
        scheduler (Any): A scheduler config (dict), a list of them, a dict
            of lists (one per optimizer) or built schedulers (returned as
            they are).
        epoch_length (int): Iterations per epoch.
        total_iters (int): Iterations of the run.

    Returns:
        tuple[Any, list[str]]: The same structure (dropped schedulers
        left out) and one note per change, for the log.
    """
    notes: List[str] = []

    def walk(item: Any) -> Any:
        if isinstance(item, (list, tuple)):
            kept = [walk(s) for s in item]
            return [s for s in kept if s is not None]
        if not isinstance(item, dict):
            return item
        if 'type' not in item:  # one list per optimizer
            return {k: walk(v) for k, v in item.items()}
        return _one(item, epoch_length, total_iters, notes)

    out = walk(scheduler)
    return ([] if out is None else out), notes  # a lone dropped scheduler
