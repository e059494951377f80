"""Schedules given as fractions of the run, resolved when it is built.

In a config, any of these may be a run fraction, a percentage string
such as ``'10%'`` or a ratio such as ``'1/300'`` (a fraction of
``train_cfg.max_epochs``, or of ``train_cfg.max_iters`` for an
iteration-based loop; ``'1/300'`` is one epoch of a 300-epoch recipe,
exactly), so that ``train_cfg.max_epochs=N`` alone moves every schedule
with the run:

* ``param_scheduler[*]``: ``begin``, ``end``, ``T_max`` and the entries of
  ``milestones``;
* ``custom_hooks[*]`` and ``default_hooks.*``: fields named ``*_epochs``
  or ``*_iters`` (``TeacherTempWarmupHook.warmup_epochs``,
  ``FreezeLastLayerHook.freeze_epochs``, ...) and ``interval``
  (``CheckpointHook``);
* ``train_cfg.val_interval``.

:func:`resolve_run_fractions` (called by ``SSLRunner.from_cfg``) replaces
them with numbers:

* epoch-based loop, ``max_epochs = E``: ``'p%'`` -> ``p / 100 * E`` epochs.
  A scheduler with ``convert_to_iter_based=True`` and hook ``*_epochs``
  fields may get a fractional number of epochs (turned into iterations
  once the data is loaded: :mod:`.scheduler_steps`, mmssl's hooks);
  per-epoch schedulers are placed with :func:`boundary`, intervals are
  rounded (to at least 1). A ``*_iters`` field or an iteration-based
  scheduler cannot be a fraction here (the number of iterations per epoch
  is known only once the data is loaded).
* iteration-based loop, ``max_iters = I``: ``'p%'`` -> ``boundary(p / 100
  * I, I)`` iterations; epoch-based schedulers become iteration-based, a hook's
  ``X_epochs`` fraction becomes ``X_iters``, ``interval`` counts
  iterations (``by_epoch=False``).

Numbers in a config are left as they are.
"""

import re
from typing import Any, Dict, List, Optional, Tuple

_PERCENT = re.compile(r'^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$')
_RATIO = re.compile(r'^\s*(\d+)\s*/\s*(\d+)\s*$')
_SCHEDULER_FIELDS = ('begin', 'end', 'T_max')


def parse_fraction(value: Any) -> Optional[float]:
    """``'10%'`` -> 0.1, ``'1/300'`` -> 1 / 300; None for anything that
    is not such a string.

    Raises:
        ValueError: For a fraction above the whole run (``'150%'``,
            ``'3/2'``) or a ratio over 0 (``'1/0'``).
    """
    if not isinstance(value, str):
        return None
    percent, ratio = _PERCENT.match(value), _RATIO.match(value)
    if percent is not None:
        fraction = float(percent.group(1)) / 100
    elif ratio is not None:
        numerator, denominator = int(ratio.group(1)), int(ratio.group(2))
        if denominator == 0:
            raise ValueError(
                f'{value!r}: a run fraction a/b needs b > 0 (e.g. '
                "'1/300', one epoch of 300)."
            )
        fraction = numerator / denominator
    else:
        return None
    if fraction > 1:
        raise ValueError(
            f'{value!r}: a run fraction is at most the whole run '
            "('100%' or '1/1')."
        )
    return fraction


def _number(value: float) -> Any:
    """An int when ``value`` is integral (keeps configs' int types)."""
    rounded = round(value)
    return rounded if abs(value - rounded) < 1e-9 else value


def boundary(position: float, total: Optional[int]) -> int:
    """The step (iteration or epoch) where a schedule phase starts or ends.

    ``position`` is rounded to the nearest step, but a point strictly
    inside a run of ``total`` steps stays inside it: in ``[1, total - 1]``
    when ``total >= 2`` (every phase of the schedule keeps at least one
    step, a 10% warm-up of a 3-iteration run included), and at 0 when
    ``total == 1`` (the single step belongs to the last phase: a
    1-iteration run trains at the base lr, not at the warm-up's start).
    Points at or beyond the ends are only rounded.

    Args:
        position (float): The point, in steps.
        total (int, optional): The run length, in the same steps; None
            (unknown): only rounded.

    Returns:
        int: The step.
    """
    step = int(round(position))
    if total is not None and 0 < position < total:
        step = min(max(step, 1), total - 1) if total >= 2 else 0
    return step


class RunLength:
    """How long a run is, from ``train_cfg``.

    Args:
        train_cfg (dict): The config's ``train_cfg``.

    Raises:
        ValueError: Neither ``max_epochs`` nor ``max_iters`` is set.
    """

    def __init__(self, train_cfg: Dict) -> None:
        if train_cfg.get('max_epochs') is not None:
            self.by_epoch, self.total = True, train_cfg['max_epochs']
        elif train_cfg.get('max_iters') is not None:
            self.by_epoch, self.total = False, train_cfg['max_iters']
        else:
            raise ValueError(
                'Run fractions (e.g. end="10%") need train_cfg.max_epochs '
                'or train_cfg.max_iters.'
            )
        self.unit = 'epochs' if self.by_epoch else 'iterations'

    def epochs(self, fraction: float) -> Any:
        """Fractional epochs, an int where exact."""
        return _number(fraction * self.total)

    def count(self, fraction: float, at_least: int = 0) -> int:
        """A whole number of the loop's units (a length)."""
        return max(at_least, int(round(fraction * self.total)))

    def point(self, fraction: float) -> int:
        """A whole step of the loop (see :func:`boundary`)."""
        return boundary(fraction * self.total, self.total)


def _where(place: str, key: str, value: Any, run: RunLength) -> str:
    return f'{place}.{key}={value!r} of {run.total} {run.unit}'


def _resolve_scheduler(
    sched: Dict, run: RunLength, place: str, notes: List[str]
) -> None:
    fields = [k for k in _SCHEDULER_FIELDS if parse_fraction(sched.get(k))]
    milestones = sched.get('milestones')
    has_milestones = isinstance(milestones, (list, tuple)) and any(
        parse_fraction(m) is not None for m in milestones
    )
    if not fields and not has_milestones:
        return
    by_epoch = sched.get('by_epoch', True)
    if run.by_epoch and not by_epoch:
        raise ValueError(
            f'{place}: a run fraction in an iteration-based scheduler '
            '(by_epoch=False) of an epoch-based loop cannot be resolved; '
            'use by_epoch=True, convert_to_iter_based=True.'
        )
    fine = run.by_epoch and sched.get('convert_to_iter_based', False)

    def convert(value: Any, key: str = 'begin') -> Any:
        fraction = parse_fraction(value)
        if fraction is None:
            return value
        if fine:  # iterations once the data is loaded (schedulers_for_run)
            return run.epochs(fraction)
        if key == 'T_max':  # a length
            return run.count(fraction, at_least=1)
        return run.point(fraction)

    for key in fields:
        old = sched[key]
        sched[key] = convert(old, key)
        notes.append(f'{_where(place, key, old, run)} -> {sched[key]}')
    if has_milestones:
        sched['milestones'] = [convert(m) for m in milestones]
    if not run.by_epoch and by_epoch:
        # iteration-based loop: the scheduler now counts iterations
        sched['by_epoch'] = False
        sched.pop('convert_to_iter_based', None)


def _resolve_hook(
    hook: Dict, run: RunLength, place: str, notes: List[str]
) -> None:
    for key in list(hook):
        fraction = parse_fraction(hook[key])
        if fraction is None:
            continue
        old = hook[key]
        if key == 'interval':
            hook[key] = run.count(fraction, at_least=1)
            if not run.by_epoch:
                hook['by_epoch'] = False
            new_key = key
        elif key.endswith('_epochs') and run.by_epoch:
            hook[key], new_key = run.epochs(fraction), key
        elif key.endswith('_epochs'):
            new_key = key[: -len('_epochs')] + '_iters'
            del hook[key]
            hook[new_key] = run.point(fraction)
        elif key.endswith('_iters') and not run.by_epoch:
            hook[key], new_key = run.point(fraction), key
        else:
            raise ValueError(
                f'{place}.{key}={old!r}: only `interval`, `*_epochs` and, '
                'in iteration-based loops, `*_iters` fields take a run '
                'fraction.'
            )
        notes.append(
            f'{_where(place, key, old, run)} -> {new_key}={hook[new_key]}'
        )


def _hook_entries(cfg: Dict) -> List[Tuple[str, Dict]]:
    entries = []
    for i, hook in enumerate(cfg.get('custom_hooks') or []):
        if isinstance(hook, dict):
            entries.append((f'custom_hooks[{i}]', hook))
    for name, hook in (cfg.get('default_hooks') or {}).items():
        if isinstance(hook, dict):
            entries.append((f'default_hooks.{name}', hook))
    return entries


def resolve_run_fractions(cfg: Dict) -> List[str]:
    """Replace run fractions (``'10%'``) in ``cfg`` by numbers, in place.

    See the module docstring for the fields and the rules.

    Args:
        cfg (dict | mmengine.Config): The full config.

    Returns:
        list[str]: One line per replaced value, for the log.

    Raises:
        ValueError: For a fraction that cannot be resolved (no run
            length, a field that takes none, above 100%).
    """
    train_cfg = cfg.get('train_cfg') or {}
    schedulers = cfg.get('param_scheduler') or []
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    places = [
        (f'param_scheduler[{i}]', s)
        for i, s in enumerate(schedulers)
        if isinstance(s, dict)
    ]
    if not _has_fraction(train_cfg, places, _hook_entries(cfg)):
        return []
    run = RunLength(train_cfg)
    notes: List[str] = []
    for place, sched in places:
        _resolve_scheduler(sched, run, place, notes)
    for place, hook in _hook_entries(cfg):
        _resolve_hook(hook, run, place, notes)
    fraction = parse_fraction(train_cfg.get('val_interval'))
    if fraction is not None:
        old = train_cfg['val_interval']
        train_cfg['val_interval'] = run.count(fraction, at_least=1)
        notes.append(
            f'{_where("train_cfg", "val_interval", old, run)} -> '
            f'{train_cfg["val_interval"]}'
        )
    return notes


def _has_fraction(train_cfg, scheduler_places, hook_places) -> bool:
    values = [train_cfg.get('val_interval')]
    for _, sched in scheduler_places:
        values += [sched.get(k) for k in _SCHEDULER_FIELDS]
        values += list(sched.get('milestones') or [])
    for _, hook in hook_places:
        values += list(hook.values())
    return any(parse_fraction(v) is not None for v in values)


def set_run_length(
    cfg: Dict,
    max_epochs: Optional[int] = None,
    max_iters: Optional[int] = None,
) -> Optional[str]:
    """Set the run length (``--max-epochs`` / ``--max-iters``), in place.

    ``max_epochs`` sets ``train_cfg.max_epochs``. ``max_iters`` turns the
    loop into an ``IterBasedTrainLoop`` of that many iterations (its
    ``val_interval`` kept, the log counting iterations); the run
    fractions of the config then count iterations
    (:func:`resolve_run_fractions`).

    Args:
        cfg (dict | mmengine.Config): The full config.
        max_epochs (int, optional): Epochs to train.
        max_iters (int, optional): Iterations to train.

    Returns:
        str | None: A line for the log, None when nothing was set.

    Raises:
        ValueError: Both given, or a value below 1.
    """
    if max_epochs is None and max_iters is None:
        return None
    if max_epochs is not None and max_iters is not None:
        raise ValueError('Give --max-epochs or --max-iters, not both.')
    value = max_epochs if max_iters is None else max_iters
    if value < 1:
        raise ValueError(f'The run length must be >= 1, got {value}.')
    train_cfg = dict(cfg.get('train_cfg') or {})
    if max_epochs is not None:
        train_cfg['max_epochs'] = max_epochs
        cfg['train_cfg'] = train_cfg
        return f'run length: {max_epochs} epochs'
    new = dict(type='IterBasedTrainLoop', max_iters=max_iters)
    if 'val_interval' in train_cfg:
        new['val_interval'] = train_cfg['val_interval']
    cfg['train_cfg'] = new
    # log 'Iter(train) [3/3]', not 'Epoch(train) [1][3/2]'
    cfg['log_processor'] = dict(cfg.get('log_processor') or {}, by_epoch=False)
    return f'run length: {max_iters} iterations (IterBasedTrainLoop)'
