"""Dump the resolved configs of a tree, or compare a tree with a dump.

A refactor of config files (moving a block into a ``_base_`` file,
inheriting instead of restating) must leave what ``Config.fromfile`` gives
unchanged. Dump before the edit, compare after it::

    python .dev_scripts/resolved_configs.py dump /tmp/before.pkl configs
    # ... edit configs ...
    python .dev_scripts/resolved_configs.py compare /tmp/before.pkl configs

With ``--fractions`` the run fractions (``'5%'``, ``'1/300'``) are also
resolved, at each config's own run length
(:func:`mmssl.config.resolve_run_fractions`), before the dump or the
compare: a change that only rewrites how a fraction is written
(``'5.0%'`` -> ``'5%'``, ``'0.3333333333333333%'`` -> ``'1/300'``)
compares equal, a change of the epoch or iteration it gives does not.
Dump and compare with the same flag.

``compare`` prints one line per config whose resolved dict changed (the
differing dotted keys, via :func:`mmssl.config.diff._flatten`), one
line per config that appeared or vanished, and exits 1 when any did.
Files under ``_base_`` folders are skipped: they are not run on their own.
"""

import argparse
import glob
import os.path as osp
import pickle
import sys
from typing import Dict, List

from mmssl.config import load_config, resolve_run_fractions
from mmssl.config.diff import _flatten


def _resolved(file: str, fractions: bool) -> dict:
    cfg = load_config(file)
    if fractions:
        resolve_run_fractions(cfg)
    return cfg.to_dict()


def resolve_all(
    paths: List[str], fractions: bool = False
) -> Dict[str, object]:
    """``{file: load_config(file).to_dict()}`` for every config file.

    Args:
        paths (list[str]): Config files or folders (searched recursively).
        fractions (bool): Also resolve the run fractions.

    Returns:
        dict: The resolved dict per file, or the error text where a file
        does not parse.
    """
    files = []
    for path in paths:
        if osp.isdir(path):
            files += glob.glob(osp.join(path, '**', '*.py'), recursive=True)
        else:
            files.append(path)
    out: Dict[str, object] = {}
    for file in sorted(files):
        if '_base_' in file.split(osp.sep):
            continue
        try:
            out[file] = _resolved(file, fractions)
        except Exception as exc:  # a broken file is a result too
            out[file] = f'error: {type(exc).__name__}: {exc}'
    return out


def differences(
    before: Dict[str, object], after: Dict[str, object]
) -> List[str]:
    """One line per config whose resolved dict differs between two dumps."""
    lines = []
    for file in sorted(set(before) | set(after)):
        if file not in after or file not in before:
            lines.append(
                f'{file}: only {"before" if file in before else "after"}'
            )
            continue
        old, new = dict(_flatten(before[file])), dict(_flatten(after[file]))
        keys = [
            k
            for k in sorted(set(old) | set(new))
            if old.get(k, '<absent>') != new.get(k, '<absent>')
        ]
        if keys:
            lines.append(f'{file}: {", ".join(keys[:8])}')
        elif before[file] != after[file]:  # e.g. a tuple became a list
            lines.append(f'{file}: same values, other container types')
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('action', choices=['dump', 'compare'])
    parser.add_argument('dump_file')
    parser.add_argument('paths', nargs='+', help='config files or folders')
    parser.add_argument(
        '--fractions',
        action='store_true',
        help="also resolve run fractions ('5%%', '1/300') at each "
        "config's own length before dumping or comparing",
    )
    args = parser.parse_args()
    resolved = resolve_all(args.paths, args.fractions)
    if args.action == 'dump':
        with open(args.dump_file, 'wb') as f:
            pickle.dump(resolved, f)
        print(f'{len(resolved)} configs resolved into {args.dump_file}')
        return 0
    with open(args.dump_file, 'rb') as f:
        before = pickle.load(f)
    # a partial compare (some files or folders) looks at those only
    before = {
        f: v
        for f, v in before.items()
        if any(f == p or f.startswith(p.rstrip('/') + '/') for p in args.paths)
    }
    lines = differences(before, resolved)
    print(
        '\n'.join(lines)
        if lines
        else f'{len(resolved)} configs resolve as before'
    )
    return 1 if lines else 0


if __name__ == '__main__':
    sys.exit(main())
