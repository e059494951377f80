"""Whether a checkpoint was written by the same config as this run."""

from typing import Any, Iterator, List, Tuple

#: Keys that change between a first start and a resumed start by design.
RUN_KEYS = frozenset({'resume', 'load_from'})


def _flatten(obj: Any, prefix: str = '') -> Iterator[Tuple[str, Any]]:
    if isinstance(obj, dict):
        for key in sorted(obj, key=str):
            name = f'{prefix}.{key}' if prefix else str(key)
            yield from _flatten(obj[key], name)
    elif isinstance(obj, (list, tuple)):
        if not obj:
            yield prefix, type(obj).__name__
        for i, item in enumerate(obj):
            yield from _flatten(item, f'{prefix}[{i}]')
    else:
        yield prefix, obj


def config_differences(saved_text: str, cfg: Any, limit: int = 5) -> List[str]:
    """Dotted keys whose values differ between a saved config and ``cfg``.

    Args:
        saved_text (str): ``checkpoint['meta']['cfg']`` (the
            ``pretty_text`` mmengine stores in every checkpoint).
        cfg (mmengine.Config): The config of this run, prepared the same
            way (same tool, same flags).
        limit (int): Report at most this many keys. Defaults to 5.

    Returns:
        list[str]: ``'key: saved -> now'`` lines; empty when the configs
        agree outside :data:`RUN_KEYS`.
    """
    from mmengine.config import Config

    old = dict(_flatten(Config.fromstring(saved_text, '.py').to_dict()))
    new = dict(_flatten(cfg.to_dict()))
    out = []
    for key in sorted(set(old) | set(new)):
        if key.split('.')[0].split('[')[0] in RUN_KEYS:
            continue
        a, b = old.get(key, '<absent>'), new.get(key, '<absent>')
        if a != b:
            out.append(f'{key}: {a!r} -> {b!r}')
    return out[:limit]
