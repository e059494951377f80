"""Command-line config overrides that fail loudly on typos.

mmengine's ``DictAction`` + ``Config.merge_from_dict`` silently add any key
path, so ``--cfg-options model.backbone.archh=small`` trains the default
arch and nobody notices. Here a path must exist in the config (or be an
argument the component's class accepts, or the user opts in with
``allow_new_keys``); otherwise the error names the key and the nearest
existing keys.

Values are parsed by :mod:`mmssl.config.values`; the learning-rate
and AMP rewrites of ``tools/train.py`` are in :mod:`mmssl.config.rewrite`.
"""

import copy
import difflib
import inspect
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

#: Keys (top level or dotted) the Runner reads even when a config lacks them.
RUNNER_KNOWN_KEYS = frozenset(
    {
        'work_dir',
        'launcher',
        'resume',
        'load_from',
        'find_unused_parameters',
        'sync_bn',
        'activation_checkpointing',
        'efficient_conv_bn_eval',
        'compile',
        'model_wrapper_cfg',
        'custom_imports',
        'experiment_name',
        'randomness',
        'env_cfg',
        'log_level',
        'log_processor',
        'visualizer',
        'default_hooks',
        'custom_hooks',
        'auto_scale_lr',
        'default_scope',
        'cfg',
        'strategy',
        'train_cfg',
        'val_cfg',
        'test_cfg',
        'train_dataloader',
        'val_dataloader',
        'test_dataloader',
        'val_evaluator',
        'test_evaluator',
        'optim_wrapper',
        'param_scheduler',
        'auto_scale_lr.enable',
        'auto_scale_lr.base_batch_size',
        'auto_scale_lr.rule',
        'randomness.seed',
        'randomness.deterministic',
        'randomness.diff_rank_seed',
        'env_cfg.cudnn_benchmark',
        'env_cfg.mp_cfg',
        'env_cfg.dist_cfg',
        'env_cfg.dist_cfg.backend',
        'env_cfg.dist_cfg.timeout',
        'env_cfg.resource_limit',
        'env_cfg.tf32',
    }
)


class UnknownConfigKeyError(KeyError):
    """A ``--cfg-options`` key path that the config does not have."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ''


# --------------------------------------------------------------------------
# key checking
# --------------------------------------------------------------------------
def default_type_resolver(type_name: Any) -> List[type]:
    """Classes registered as ``type_name`` in any mmssl registry.

    mmssl registries are children of mmpretrain's (themselves of
    mmengine's), so lookups fall back to those. Each registry and its
    parents are filled from their lazy ``locations`` first, so nothing
    needs to be imported (or registered) before the lookup.

    Args:
        type_name (str | type): The ``type`` value of a config dict.

    Returns:
        list[type]: Every match (a name can live in several registries).
    """
    if inspect.isclass(type_name):
        return [type_name]
    if not isinstance(type_name, str):
        return []
    from mmengine.registry import Registry

    import mmssl.registry as registries

    found = []
    for value in vars(registries).values():
        if isinstance(value, Registry):
            try:
                _import_locations(value)
                obj = value.get(type_name)
            except Exception:  # a registry may fail to import a scope
                obj = None
            if obj is not None and obj not in found:
                found.append(obj)
    return found


def _import_locations(registry) -> None:
    """Import the modules of ``registry`` and of its parents.

    mmengine imports a registry's ``locations`` on its first lookup, but
    a child's lookup only reads its parents' tables and never imports
    their modules (mmpretrain's transforms, say).
    """
    while registry is not None:
        registry.import_from_location()
        registry = registry.parent


def accepted_arguments(obj: Any) -> Set[str]:
    """Keyword arguments a class (or function) names explicitly.

    Follows ``**kwargs`` up the MRO, since mm* classes pass them on to
    their parents' ``__init__``.

    Args:
        obj (type | callable): What a config dict builds.

    Returns:
        set[str]: Argument names (``self``, ``*args``, ``**kwargs``
        excluded).
    """
    names: Set[str] = set()
    funcs = (
        [
            klass.__init__
            for klass in inspect.getmro(obj)
            if '__init__' in vars(klass)
        ]
        if inspect.isclass(obj)
        else [obj]
    )
    for func in funcs:
        try:
            params = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            break
        has_var_kw = False
        for param in params:
            if param.kind == param.VAR_KEYWORD:
                has_var_kw = True
            elif param.kind != param.VAR_POSITIONAL and param.name != 'self':
                names.add(param.name)
        if not has_var_kw:
            break
    return names


def _join(parts: Sequence[str]) -> str:
    return '.'.join(str(p) for p in parts)


def _suggest(
    name: str, candidates: Iterable[str], prefix: Sequence[str], n: int = 3
) -> str:
    candidates = sorted({str(c) for c in candidates})
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    if close:
        return (
            'Did you mean '
            + ', '.join(f'`{_join(list(prefix) + [c])}`' for c in close)
            + '?'
        )
    shown = ', '.join(candidates[:15]) + (
        ' ...' if len(candidates) > 15 else ''
    )
    where = f'`{_join(prefix)}`' if prefix else 'the top level'
    return f'Keys at {where}: {shown}.'


def check_cfg_option_key(
    cfg_dict: Dict[str, Any],
    key: str,
    allow_new_keys: bool = False,
    known_keys: Iterable[str] = RUNNER_KNOWN_KEYS,
    type_resolver: Optional[Callable[[Any], List[type]]] = None,
) -> Optional[str]:
    """Check that the dotted ``key`` names a place in ``cfg_dict``.

    A path is accepted when every part exists (dict keys; list/tuple
    indices in range, negative ones too), or when the first missing part
    is an argument of the class named by the enclosing dict's ``type``
    (e.g. ``train_dataloader.dataset.indices`` for a ``CustomDataset``),
    or a key the Runner reads (:data:`RUNNER_KNOWN_KEYS`), or
    ``allow_new_keys`` is set.

    Args:
        cfg_dict (dict): The config as a (nested) dict.
        key (str): Dotted path such as ``model.backbone.depth`` or
            ``param_scheduler.0.end``.
        allow_new_keys (bool): Accept any missing path. Defaults to False.
        known_keys (Iterable[str]): Dotted keys accepted though absent
            (the Runner's arguments by default).
        type_resolver (callable, optional): ``type`` value -> classes; by
            default the mmssl registries.

    Returns:
        str | None: A note when a new key is added, else None.

    Raises:
        UnknownConfigKeyError: naming the key and the nearest existing
            keys.
        IndexError: for a list index out of range.
        TypeError: when the path descends into a non-container value.
    """
    resolver = type_resolver or default_type_resolver
    parts = key.split('.')
    if not key or any(p == '' for p in parts):
        raise UnknownConfigKeyError(f'Bad --cfg-options key {key!r}.')
    node: Any = cfg_dict
    for depth, part in enumerate(parts):
        prefix = parts[:depth]
        if isinstance(node, (list, tuple)):
            try:
                index = int(part)
            except ValueError:
                raise UnknownConfigKeyError(
                    f'`{_join(prefix)}` is a list; `{part}` in `{key}` '
                    f'must be an index from 0 to {len(node) - 1}.'
                ) from None
            if not -len(node) <= index < len(node):
                raise IndexError(
                    f'Index {index} in `{key}` is out of range: '
                    f'`{_join(prefix)}` has {len(node)} items.'
                )
            node = node[index]
            continue
        if not isinstance(node, dict):
            raise TypeError(
                f'Cannot set `{key}`: `{_join(prefix)}` is '
                f'{node!r} (a {type(node).__name__}), not a dict. Set the '
                f'whole value instead, e.g. `{_join(prefix)}=dict(...)`.'
            )
        if part in node:
            node = node[part]
            continue
        # ``part`` is missing at ``prefix``
        if allow_new_keys:
            return f'--cfg-options adds the new key `{key}`.'
        if _join(parts[: depth + 1]) in set(known_keys):
            return None
        accepted: Set[str] = set()
        if 'type' in node:
            for klass in resolver(node['type']):
                accepted |= accepted_arguments(klass)
            if part in accepted:
                return (
                    f'--cfg-options adds `{key}`, an argument of '
                    f'{node["type"]}.'
                )
        candidates = set(node.keys()) | accepted
        for known in known_keys:
            head, _, tail = known.rpartition('.')
            if head == _join(prefix):
                candidates.add(tail)
        raise UnknownConfigKeyError(
            f'--cfg-options key `{key}` does not exist in the config: no '
            f'`{part}` at '
            f'{"`" + _join(prefix) + "`" if prefix else "the top level"}. '
            f'{_suggest(part, candidates, prefix)} Pass --allow-new-keys '
            'to add new keys on purpose.'
        )
    return None


def _leaf_paths(node: Any, prefix: Tuple = ()) -> Iterable[Tuple[Tuple, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaf_paths(v, prefix + (k,))
    elif isinstance(node, (list, tuple)):
        for i, v in enumerate(node):
            yield from _leaf_paths(v, prefix + (str(i),))
    else:
        yield prefix, node


def substituted_variable_warnings(
    cfg_dict: Dict[str, Any], options: Dict[str, Any]
) -> List[str]:
    """Warn when overriding a config variable other entries were built from.

    Config files are Python: in ``knn_data_root = 'data/demo'`` followed
    by ``dict(data_root=knn_data_root)`` the value is copied when the file
    is read, so ``--cfg-options knn_data_root=/x`` changes only the
    variable. This finds other entries that still hold the old value.

    Args:
        cfg_dict (dict): The config before the override.
        options (dict): ``{dotted key: new value}``.

    Returns:
        list[str]: One warning per overridden top-level variable whose old
        string (or int >= 2) value appears elsewhere and is not overridden
        too.
    """
    warnings_out = []
    for key, new in options.items():
        if '.' in key or key not in cfg_dict:
            continue
        old = cfg_dict[key]
        if isinstance(old, bool) or not (
            (isinstance(old, str) and len(old) > 1)
            or (isinstance(old, int) and abs(old) >= 2)
        ):
            continue
        if old == new:
            continue
        same = [
            _join(path)
            for path, value in _leaf_paths(cfg_dict)
            if path[0] != key
            and not str(path[0]).startswith('_')
            and type(value) is type(old)
            and value == old
            and _join(path) not in options
        ]
        if same:
            shown = ', '.join(f'`{p}`' for p in same[:6])
            more = f' (+{len(same) - 6} more)' if len(same) > 6 else ''
            warnings_out.append(
                f'`{key}` changes from {old!r} to {new!r}, but {shown}{more} '
                f'still hold {old!r}: config variables are copied when the '
                'file is read. Override those keys too if they were built '
                f'from `{key}`.'
            )
    return warnings_out


# --------------------------------------------------------------------------
# merging
# --------------------------------------------------------------------------
def _merged_value(value: Any, old: Any) -> Any:
    from mmengine.config import Config, ConfigDict

    if isinstance(value, dict):
        value = copy.deepcopy(dict(value))
        delete = value.pop('_delete_', False)
        if isinstance(old, dict) and not delete:
            return Config._merge_a_into_b(
                ConfigDict(value), old, allow_list_keys=True
            )
        return ConfigDict(value)
    return value


def _assign(node: Any, parts: Sequence[str], value: Any) -> Any:
    """Return ``node`` with ``value`` set at ``parts`` (dicts in place)."""
    from mmengine.config import ConfigDict

    if not parts:
        return _merged_value(value, node)
    head, rest = parts[0], parts[1:]
    if isinstance(node, (list, tuple)):
        items = list(node)
        index = int(head)
        items[index] = _assign(items[index], rest, value)
        return type(node)(items)
    if not isinstance(node, dict):
        node = ConfigDict()
    child = node[head] if head in node else ConfigDict()
    node[head] = _assign(child, rest, value)
    return node


def merge_cfg_options(
    cfg: Any,
    options: Optional[Dict[str, Any]],
    allow_new_keys: bool = False,
    known_keys: Iterable[str] = RUNNER_KNOWN_KEYS,
    type_resolver: Optional[Callable] = None,
) -> List[str]:
    """Check every key of ``options``, then set them in ``cfg``.

    All keys are checked before anything changes, so a typo leaves the
    config untouched. Dict values merge into existing dicts like
    mmengine's ``merge_from_dict`` (``_delete_=True`` replaces); list
    indices (also negative) and tuples work, also for scalar list items.

    Args:
        cfg (mmengine.Config | dict): Config to change in place.
        options (dict, optional): ``{dotted key: value}``.
        allow_new_keys (bool): Accept keys not in the config.
        known_keys (Iterable[str]): Dotted keys accepted though absent
            (the Runner's arguments by default).
        type_resolver (callable, optional): See
            :func:`check_cfg_option_key`.

    Returns:
        list[str]: Notes and warnings to show the user (new keys added,
        config variables whose copies were not updated).

    Raises:
        UnknownConfigKeyError, IndexError, TypeError: see
            :func:`check_cfg_option_key`.
    """
    if not options:
        return []
    root = cfg._cfg_dict if hasattr(cfg, '_cfg_dict') else cfg
    notes = []
    for key in options:
        note = check_cfg_option_key(
            root, key, allow_new_keys, known_keys, type_resolver
        )
        if note:
            notes.append(note)
    notes.extend(substituted_variable_warnings(root, options))
    for key, value in options.items():
        _assign(root, key.split('.'), value)
    return notes
