"""The one entry of config handling: :func:`resolve`.

A config is first read as written: :func:`~.reading.load_config` reads
the file (``mmpretrain::`` bases too) and merges ``--cfg-options``
(:mod:`.values` parses them, :mod:`.options` checks every key);
``tools/train.py`` then applies its flags (:mod:`.rewrite`,
:func:`~.run_length.set_run_length`). Before anything is built,
:func:`resolve` turns it into the config that runs, in this order:

1. an unknown top-level key stops the run (:mod:`.keys`);
2. run fractions such as ``end='10%'`` become epochs or iterations of
   this run (:mod:`.run_length`);
3. ``'auto'`` neck and head sizes follow the backbone
   (:mod:`.derived_sizes`);
4. the ``log_processor`` of type :class:`UnresolvedLogProcessor` (set in
   configs/_base_/default_runtime.py) becomes mmengine's ``LogProcessor``;
5. a ``randomness`` without a seed (missing, ``None`` or ``{}``) becomes
   ``dict(seed=None)``: mmengine draws a seed and logs it (its Runner
   takes the dict as keyword arguments and needs ``seed``).

Step 4 is what makes mmengine's plain ``Runner.from_cfg(cfg)`` stop at
once on a config nobody resolved, with a message that names the fix:
the plain Runner ignores ``runner_type``, so it would build the model
with ``'auto'`` sizes and fail deep in torch. The log processor is the
first part it builds from the config. A resolved config works with the
plain Runner too (without SSLRunner's run-time behaviour).

``SSLRunner.from_cfg`` calls it on a copy of the config, so
``tools/train.py``, ``tools/test.py``, the evaluation tools and
``RUNNERS.build(cfg)`` all run the same resolved config; the checkpoints
keep the config as written, so that a resume compares like with like.
What needs the data (fractional epochs in iterations, empty or one-step
scheduler phases: :mod:`.scheduler_steps`) is done when the runner builds
its schedulers.
"""

from typing import Any, List

from mmengine.runner import LogProcessor

from mmssl.registry import LOG_PROCESSORS

from .derived_sizes import resolve_model_sizes
from .diff import _flatten
from .keys import check_not_mmselfsup, check_top_level_keys
from .run_length import resolve_run_fractions

UNRESOLVED_MESSAGE = (
    "This config has not been resolved: it is made for mmssl's SSLRunner "
    "(runner_type='SSLRunner'), which mmengine's Runner.from_cfg ignores; "
    "its run fractions ('10%') and 'auto' neck/head sizes would reach the "
    'model as strings. Build the runner with '
    'mmssl.engine.runner.build_runner(cfg) or '
    'mmssl.registry.RUNNERS.build(cfg) (as tools/train.py does), or call '
    'mmssl.config.resolve(cfg) before Runner.from_cfg(cfg).'
)


@LOG_PROCESSORS.register_module()
class UnresolvedLogProcessor(LogProcessor):
    """The log processor of a config that :func:`resolve` has not seen.

    It never processes logs: building it raises, naming the fix.
    :func:`resolve` replaces it by mmengine's ``LogProcessor`` with the
    same arguments.

    Raises:
        RuntimeError: Always (see :data:`UNRESOLVED_MESSAGE`).
    """

    def __init__(self, *args, **kwargs) -> None:
        raise RuntimeError(UNRESOLVED_MESSAGE)


def _size_notes(before: Any, after: Any) -> List[str]:
    old = dict(_flatten(before))
    return [
        f'model.{key}={old.get(key)!r} -> {value!r}'
        for key, value in _flatten(after)
        if old.get(key) != value
    ]


def resolve(
    cfg: Any, check_keys: bool = True, sizes: bool = True
) -> List[str]:
    """Resolve ``cfg`` in place (see the module docstring for the steps).

    Args:
        cfg (mmengine.Config | dict): The full config; pass a copy to keep
            the config as written.
        check_keys (bool): Refuse unknown top-level keys. Defaults to True.
        sizes (bool): Fill ``'auto'`` sizes now. ``SSLRunner`` passes
            False: its ``build_model`` fills them after the seed is set,
            so the probe backbone draws from the seeded generator and a
            seed gives the same initial weights as it always did.
            Defaults to True.

    Returns:
        list[str]: Lines for the log, one per step that changed something
        (``run fractions: ...``, ``derived sizes: ...``).

    Raises:
        UnknownConfigKeyError: For an unknown top-level key.
        ValueError: For a run fraction or an ``'auto'`` size that cannot
            be resolved.
    """
    if check_keys:
        filename = getattr(cfg, 'filename', None)
        check_not_mmselfsup(cfg, filename)
        check_top_level_keys(list(cfg.keys()), filename)
    notes = []
    fractions = resolve_run_fractions(cfg)
    if fractions:
        notes.append('run fractions: ' + '; '.join(fractions))
    model = cfg.get('model')
    if sizes and isinstance(model, dict):
        resolved = resolve_model_sizes(model)
        if resolved is not model:
            sizes = _size_notes(model, resolved)
            cfg['model'] = resolved
            notes.append('derived sizes: ' + '; '.join(sizes))
    log_processor = cfg.get('log_processor')
    if isinstance(log_processor, dict) and log_processor.get('type') in (
        'UnresolvedLogProcessor',
        UnresolvedLogProcessor,
    ):
        log_processor['type'] = 'LogProcessor'
    randomness = cfg.get('randomness')
    if not isinstance(randomness, dict) or 'seed' not in randomness:
        cfg['randomness'] = dict(randomness or {}, seed=None)
    return notes
