"""Command-line config overrides that fail loudly on typos.

mmengine's ``DictAction`` + ``Config.merge_from_dict`` silently add any key
path, so ``--cfg-options model.backbone.archh=small`` trains the default
arch and nobody notices. Here a path must exist in the config (or be an
argument the component's class accepts, or the user opts in with
``allow_new_keys``); otherwise the error names the key and the nearest
existing keys.

Values are parsed as Python literals where they are ones (numbers,
``None``, ``True``, lists, tuples, nested tuples, dicts, quoted strings)
and are kept as strings otherwise. Unlike ``DictAction`` this keeps spaces
inside strings, lets ``"'1'"`` stay the string ``'1'`` and parses
``dict(a=1)``; bare comma lists (``a,b``) still become lists, as in
mmengine.
"""

import argparse
import ast
import copy
import difflib
import inspect
import math
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

_MISSING = object()

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
    }
)


class UnknownConfigKeyError(KeyError):
    """A ``--cfg-options`` key path that the config does not have."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ''


# --------------------------------------------------------------------------
# value parsing
# --------------------------------------------------------------------------
def _split_top_level_commas(text: str) -> List[str]:
    """Split at commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in '\'"':
            quote = ch
        elif ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        elif ch == ',' and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _bare_word(word: str) -> Any:
    """``true``/``false``/``none``/``null`` (any case) or the word."""
    low = word.lower()
    if low in ('true', 'false'):
        return low == 'true'
    if low in ('none', 'null'):
        return None
    return word


def _is_dict_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == 'dict'
    )


def _node_value(node: ast.AST, in_dict_call: bool) -> Any:
    """Value of a literal AST node; ``dict(k=v)`` calls nest anywhere.

    Inside a ``dict(...)`` call a bare name is a word (``type=SGD`` gives
    ``'SGD'``, ``x=true`` gives True), as bare words are elsewhere.
    Nothing is evaluated: any other node raises ValueError.
    """
    containers = {ast.List: list, ast.Tuple: tuple, ast.Set: set}
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and in_dict_call:
        return _bare_word(node.id)
    if type(node) in containers:
        items = [_node_value(e, in_dict_call) for e in node.elts]
        return containers[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {
            _node_value(k, in_dict_call): _node_value(v, in_dict_call)
            for k, v in zip(node.keys, node.values)
        }
    if (
        _is_dict_call(node)
        and not node.args
        and all(kw.arg is not None for kw in node.keywords)
    ):
        return {kw.arg: _node_value(kw.value, True) for kw in node.keywords}
    if isinstance(node, ast.UnaryOp) and isinstance(
        node.op, (ast.UAdd, ast.USub)
    ):
        value = _node_value(node.operand, in_dict_call)
        if isinstance(value, (int, float, complex)) and not isinstance(
            value, bool
        ):
            return -value if isinstance(node.op, ast.USub) else value
    raise ValueError(f'not a literal: {ast.dump(node)[:60]}')


def _literal_with_dict_calls(text: str) -> Any:
    """Parse a literal that holds ``dict(...)`` calls, nested anywhere.

    Returns:
        Any: The value, or ``_MISSING`` when ``text`` is no such literal
        (a bare word, a path, a bare comma list, ...).

    Raises:
        ValueError: for the user, when ``text`` is a ``dict(...)`` call
            holding anything but literals, bare words and containers.
    """
    try:
        node = ast.parse(text, mode='eval').body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _MISSING
    if isinstance(node, ast.Tuple) and not text.startswith('('):
        return _MISSING  # a bare comma list: a list, see parse_cfg_value
    try:
        return _node_value(node, in_dict_call=False)
    except (ValueError, RecursionError) as err:
        if _is_dict_call(node):
            raise ValueError(
                f'Cannot parse the --cfg-options value {text!r}: inside '
                'dict(...) only literals, bare words (type=SGD) and nested '
                'dict(...), [...] or (...) are allowed, as keywords (no '
                "**). Quote other strings: dict(data_root='data/x')."
            ) from err
        return _MISSING


def parse_cfg_value(text: str) -> Any:
    """Turn the text after ``=`` in ``KEY=VALUE`` into a Python value.

    Nothing is evaluated: Python literals are read with ``ast``, and
    ``dict(k=v, ...)`` calls may nest anywhere in them.

    Examples:
        >>> parse_cfg_value('0.1'), parse_cfg_value('None')
        (0.1, None)
        >>> parse_cfg_value('[(1, 2), (3, 4)]')
        [(1, 2), (3, 4)]
        >>> parse_cfg_value('[a, b]'), parse_cfg_value('a,b')
        (['a', 'b'], ['a', 'b'])
        >>> parse_cfg_value("'1'"), parse_cfg_value('my dir')
        ('1', 'my dir')
        >>> parse_cfg_value('dict(a=1, b=dict(c=[1, 2]), t=SGD)')
        {'a': 1, 'b': {'c': [1, 2]}, 't': 'SGD'}

    Args:
        text (str): The value as the shell passed it.

    Returns:
        Any: int, float, bool, None, list, tuple, dict or str.

    Raises:
        ValueError: for a ``dict(...)`` call holding anything else than
            literals, bare words and nested containers.
    """
    stripped = text.strip()
    if not stripped:
        return ''
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    value = _literal_with_dict_calls(stripped)
    if value is not _MISSING:
        return value
    is_tuple = stripped.startswith('(') and stripped.endswith(')')
    is_list = stripped.startswith('[') and stripped.endswith(']')
    if is_tuple or is_list:
        inner = stripped[1:-1]
    elif ',' in stripped and len(_split_top_level_commas(stripped)) > 1:
        inner = stripped
    else:
        return _bare_word(stripped)
    items = [
        parse_cfg_value(part)
        for part in _split_top_level_commas(inner)
        if part.strip()
    ]
    return tuple(items) if is_tuple else items


class CfgOptionsAction(argparse.Action):
    """argparse action: ``KEY=VALUE ...`` -> ``{KEY: parsed VALUE}``.

    A drop-in replacement for mmengine's ``DictAction`` using
    :func:`parse_cfg_value`. Repeated options accumulate.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        options = dict(getattr(namespace, self.dest, None) or {})
        for item in values or []:
            if '=' not in item:
                parser.error(
                    f'{option_string} expects KEY=VALUE pairs, got {item!r}'
                )
            key, value = item.split('=', 1)
            try:
                options[key.strip()] = parse_cfg_value(value)
            except ValueError as err:
                parser.error(f'{key.strip()}: {err}')
        setattr(namespace, self.dest, options)


# --------------------------------------------------------------------------
# key checking
# --------------------------------------------------------------------------
def default_type_resolver(type_name: Any) -> List[type]:
    """Classes registered as ``type_name`` in any mmssl registry.

    mmssl registries are children of mmpretrain's (themselves of
    mmengine's), so lookups fall back to those. Call
    ``register_all_modules()`` first.

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
                obj = value.get(type_name)
            except Exception:  # a registry may fail to import a scope
                obj = None
            if obj is not None and obj not in found:
                found.append(obj)
    return found


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


# --------------------------------------------------------------------------
# learning-rate scaling and AMP
# --------------------------------------------------------------------------
def lr_scale_factor(
    real_batch_size: int, base_batch_size: int, rule: str
) -> float:
    """Factor for the learning rate when the batch size changes.

    ``linear`` (Goyal et al. 2017, https://arxiv.org/abs/1706.02677):
    ``real / base``. ``sqrt`` (used by DINOv2 w.r.t. a base of 1024,
    Oquab et al. 2023, https://arxiv.org/abs/2304.07193):
    ``sqrt(real / base)``.

    Args:
        real_batch_size (int): world size x per-process batch size.
        base_batch_size (int): Batch size the config's lr was tuned for.
        rule (str): ``'linear'`` or ``'sqrt'``.

    Returns:
        float: The factor.
    """
    if base_batch_size <= 0 or real_batch_size <= 0:
        raise ValueError(
            f'Batch sizes must be positive, got real='
            f'{real_batch_size}, base={base_batch_size}.'
        )
    ratio = real_batch_size / base_batch_size
    if rule == 'linear':
        return ratio
    if rule == 'sqrt':
        return math.sqrt(ratio)
    raise ValueError(
        f'Unknown lr scaling rule {rule!r}; use "linear" or "sqrt".'
    )


def _optimizer_cfgs(optim_wrapper: Dict[str, Any]) -> List[Tuple[str, Dict]]:
    if 'optimizer' in optim_wrapper:
        return [('optim_wrapper.optimizer', optim_wrapper['optimizer'])]
    found = []
    for name, sub in optim_wrapper.items():
        if isinstance(sub, dict) and 'optimizer' in sub:
            found.append((f'optim_wrapper.{name}.optimizer', sub['optimizer']))
    return found


def auto_scale_lr_in_cfg(
    cfg: Any, world_size: int, rule: str = 'linear'
) -> List[str]:
    """Scale the config's learning rates for the real batch size.

    Real batch size = ``world_size`` x ``train_dataloader.batch_size``;
    the base is ``auto_scale_lr.base_batch_size``. Scales ``lr`` of every
    optimizer in ``optim_wrapper`` and the absolute ``eta_min`` of lr
    schedulers, then sets ``auto_scale_lr.enable=False`` so mmengine does
    not scale a second time.

    Args:
        cfg (mmengine.Config): Config, changed in place.
        world_size (int): Number of processes.
        rule (str): ``'linear'`` or ``'sqrt'``.

    Returns:
        list[str]: Log lines giving the rule, batch sizes and old -> new lr.

    Raises:
        ValueError: without ``auto_scale_lr.base_batch_size`` or an
            optimizer ``lr``.
    """
    auto = cfg.get('auto_scale_lr') or {}
    base = auto.get('base_batch_size')
    if not base:
        raise ValueError(
            '--auto-scale-lr needs `auto_scale_lr = dict(base_batch_size=N)` '
            'in the config (N: the total batch size its lr was tuned for); '
            'add it or pass --cfg-options auto_scale_lr.base_batch_size=N.'
        )
    batch = cfg.train_dataloader.batch_size
    real = world_size * batch
    factor = lr_scale_factor(real, base, rule)
    lines = [
        f'auto-scale-lr: rule={rule}, real batch size {real} (world size '
        f'{world_size} x batch_size {batch}), base batch size {base}, '
        f'factor {factor:.6g}'
    ]
    optimizers = _optimizer_cfgs(cfg.optim_wrapper)
    if not optimizers or any('lr' not in o for _, o in optimizers):
        raise ValueError(
            '--auto-scale-lr found no optimizer `lr` in optim_wrapper.'
        )
    for path, opt in optimizers:
        old = opt['lr']
        opt['lr'] = old * factor
        lines.append(f'auto-scale-lr: {path}.lr {old:.6g} -> {opt["lr"]:.6g}')
    schedulers = cfg.get('param_scheduler') or []
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    for i, sched in enumerate(schedulers):
        if not isinstance(sched, dict) or 'eta_min' not in sched:
            continue
        name = str(sched.get('type', ''))
        is_lr = (
            sched['param_name'] == 'lr'
            if 'param_name' in sched
            else name.endswith('LR')
        )
        if is_lr:
            old = sched['eta_min']
            sched['eta_min'] = old * factor
            lines.append(
                f'auto-scale-lr: param_scheduler.{i}.eta_min '
                f'{old:.6g} -> {sched["eta_min"]:.6g}'
            )
    auto['enable'] = False
    cfg.auto_scale_lr = auto
    return lines


def _set_type(cfg: Any, type_name: str) -> None:
    """Set ``cfg['type']``; a dict inherited from an ``mmpretrain::`` base
    carries ``_scope_='mmpretrain'``, whose registries lack mmssl's
    classes, so its scope becomes mmssl's (which sees all three)."""
    cfg['type'] = type_name
    if '_scope_' in cfg:
        cfg['_scope_'] = 'mmssl'


def enable_amp_in_cfg(cfg: Any, cuda_available: bool) -> str:
    """Switch the optimizer wrapper to mixed precision.

    With CUDA: mmengine's ``AmpOptimWrapper`` (float16 with a dynamic
    loss scale, unless the config sets ``dtype``). Without CUDA:
    bfloat16 autocast on the CPU (``CPUAmpOptimWrapper``), since
    ``AmpOptimWrapper`` requires a GPU.

    Args:
        cfg (mmengine.Config): Config, changed in place.
        cuda_available (bool): Whether a GPU is used.

    Returns:
        str: What was done, for the log.
    """
    wrapper = cfg.optim_wrapper
    current = wrapper.get('type', 'OptimWrapper')
    # full-precision wrapper -> (GPU AMP wrapper, CPU bfloat16 wrapper)
    amp_types = {
        'OptimWrapper': ('AmpOptimWrapper', 'CPUAmpOptimWrapper'),
        'NaNGuardOptimWrapper': (
            'NaNGuardAmpOptimWrapper',
            'NaNGuardCPUAmpOptimWrapper',
        ),
    }
    gpu_to_cpu = {gpu: cpu for gpu, cpu in amp_types.values()}
    if current in gpu_to_cpu or current in gpu_to_cpu.values():
        if current in gpu_to_cpu and not cuda_available:
            _set_type(wrapper, gpu_to_cpu[current])
            wrapper.pop('loss_scale', None)
            return (
                f'--amp: the config has {current} but CUDA is not '
                f'available; using {wrapper["type"]} (bfloat16).'
            )
        return f'--amp: the config already uses {current}.'
    if current not in amp_types:
        raise ValueError(
            f'--amp cannot convert optim_wrapper type {current!r}; set an '
            'AMP wrapper in the config instead.'
        )
    gpu_type, cpu_type = amp_types[current]
    if cuda_available:
        _set_type(wrapper, gpu_type)
        wrapper.setdefault('loss_scale', 'dynamic')
        return (
            f'--amp: {gpu_type} (dtype '
            f'{wrapper.get("dtype", "float16")}, loss_scale '
            f'{wrapper["loss_scale"]}).'
        )
    _set_type(wrapper, cpu_type)
    return (
        f'--amp: CUDA is not available, using {cpu_type} '
        '(bfloat16 autocast on the CPU, no loss scaling).'
    )
