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
   (:mod:`.derived_sizes`).

``SSLRunner.from_cfg`` calls it on a copy of the config, so
``tools/train.py``, ``tools/test.py``, the evaluation tools and
``RUNNERS.build(cfg)`` all run the same resolved config; the checkpoints
keep the config as written, so that a resume compares like with like.
What needs the data (fractional epochs in iterations, empty or one-step
scheduler phases: :mod:`.scheduler_steps`) is done when the runner builds
its schedulers.
"""

from typing import Any, List

from .derived_sizes import resolve_model_sizes
from .diff import _flatten
from .keys import check_top_level_keys
from .run_length import resolve_run_fractions


def _size_notes(before: Any, after: Any) -> List[str]:
    old = dict(_flatten(before))
    return [
        f'model.{key}={old.get(key)!r} -> {value!r}'
        for key, value in _flatten(after)
        if old.get(key) != value
    ]


def resolve(cfg: Any, check_keys: bool = True) -> List[str]:
    """Resolve ``cfg`` in place (see the module docstring for the steps).

    Args:
        cfg (mmengine.Config | dict): The full config; pass a copy to keep
            the config as written.
        check_keys (bool): Refuse unknown top-level keys. Defaults to True.

    Returns:
        list[str]: Lines for the log, one per step that changed something
        (``run fractions: ...``, ``derived sizes: ...``).

    Raises:
        UnknownConfigKeyError: For an unknown top-level key.
        ValueError: For a run fraction or an ``'auto'`` size that cannot
            be resolved.
    """
    if check_keys:
        check_top_level_keys(list(cfg.keys()), getattr(cfg, 'filename', None))
    notes = []
    fractions = resolve_run_fractions(cfg)
    if fractions:
        notes.append('run fractions: ' + '; '.join(fractions))
    model = cfg.get('model')
    if isinstance(model, dict):
        resolved = resolve_model_sizes(model)
        if resolved is not model:
            sizes = _size_notes(model, resolved)
            cfg['model'] = resolved
            notes.append('derived sizes: ' + '; '.join(sizes))
    return notes
