"""What a migration changed and what it could not map."""

from dataclasses import dataclass, field
from typing import List, Tuple

#: Type-name prefixes MMSelfSup 1.x used to reach other packages' registries
SCOPE_PREFIXES = ('mmselfsup.', 'mmcls.', 'mmpretrain.')


@dataclass
class MigrationReport:
    """Lines of one config's migration.

    Attributes:
        source (str): The MMSelfSup config file.
        changed (list[tuple[str, str]]): ``(where, what)`` per rewrite.
        unmapped (list[tuple[str, str]]): ``(where, why)`` per setting with
            no mmssl counterpart (dropped or kept as it was).
    """

    source: str = ''
    changed: List[Tuple[str, str]] = field(default_factory=list)
    unmapped: List[Tuple[str, str]] = field(default_factory=list)

    def change(self, where: str, what: str) -> None:
        if (where, what) not in self.changed:
            self.changed.append((where, what))

    def cannot(self, where: str, why: str) -> None:
        if (where, why) not in self.unmapped:
            self.unmapped.append((where, why))

    def lines(self) -> List[str]:
        """The report as printable lines."""
        out = [f'{self.source}: {len(self.changed)} changes']
        out += [f'  changed  {w}: {m}' for w, m in self.changed]
        out += [f'  NOT MAPPED  {w}: {m}' for w, m in self.unmapped]
        return out


def strip_scope(name: str) -> str:
    """``'mmselfsup.LARS'`` -> ``'LARS'``; other names unchanged."""
    for prefix in SCOPE_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def walk(node, path: str, visit):
    """Rebuild ``node`` bottom-up, calling ``visit(d, path)`` on each dict
    with a string ``type``; ``visit`` returns the dict to keep, a list (in
    a list: spliced in place) or ``None`` (dropped from a list)."""
    if isinstance(node, dict):
        out = {k: walk(v, f'{path}.{k}', visit) for k, v in node.items()}
        if isinstance(out.get('type'), str):
            return visit(out, path)
        return out
    if isinstance(node, (list, tuple)):
        items = []
        for i, item in enumerate(node):
            new = walk(item, f'{path}[{i}]', visit)
            if new is None and item is not None:
                continue
            if isinstance(new, list) and isinstance(item, dict):
                items.extend(new)
            else:
                items.append(new)
        return items if isinstance(node, list) else tuple(items)
    return node
