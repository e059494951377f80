"""The markdown tables of ``zoo_report.py`` (random vs trained per demo)."""

import os.path as osp
from typing import Dict, List

NOT_MEASURED = 'not measured yet'


def _top1(row: Dict, key: str, metric: str) -> str:
    value = row.get(key)
    return f'{value[metric]:.2f}' if value else '-'


def table(rows: Dict[str, Dict], configs: List[str]) -> str:
    """Markdown table: every config in ``configs`` plus measured ones."""
    lines = [
        '| demo config | trained iters | kNN top-1 random | kNN top-1 '
        'random + BN recal. | kNN top-1 trained | linear top-1 random | '
        'linear top-1 random + BN recal. | linear top-1 trained | '
        'train wall (s) | command |',
        '|---|---|---|---|---|---|---|---|---|---|',
    ]
    for config in sorted(set(configs) | set(rows)):
        row = rows.get(config, {})
        if row.get('status') != 'done':
            lines.append(f'| `{config}` | {NOT_MEASURED} |' + ' |' * 8)
            continue
        trained = row.get('trained_config', config)
        name = f'`{config}`'
        if trained != config:
            name += f' (trains `{osp.basename(trained)}`)'
        cells = [
            name,
            str(row['settings']['max_iters'] or 'full schedule'),
            _top1(row, 'random_knn', 'knn/top1'),
            _top1(row, 'bnrecal_knn', 'knn/top1'),
            _top1(row, 'trained_knn', 'knn/top1'),
            _top1(row, 'random_linear', 'accuracy/top1'),
            _top1(row, 'bnrecal_linear', 'accuracy/top1'),
            _top1(row, 'trained_linear', 'accuracy/top1'),
            f'{row["train_s"]:.0f}',
            f'`{row["command"]}`',
        ]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def write_table(doc: str, dataset: str, text: str) -> None:
    """Replace (or append) the marked section of ``doc``."""
    begin = f'<!-- zoo-table:{dataset} -->'
    end = f'<!-- /zoo-table:{dataset} -->'
    old = open(doc).read() if osp.exists(doc) else ''
    block = f'{begin}\n{text}\n{end}'
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + block + rest.split(end, 1)[1]
    else:
        new = old.rstrip('\n') + f'\n\n{block}\n'
    with open(doc, 'w') as f:
        f.write(new)
