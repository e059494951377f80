"""Config, result and report helpers of ``.dev_scripts/mutation_test.py``."""

import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import tomllib

# mutmut 3.8's exit codes (mutmut/stats.py), grouped as the table shows them.
KILLED = {1, 3}
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}
NO_TESTS = {5, 33}
COLUMNS = ('mutants', 'killed', 'survived', 'timeout', 'no_tests', 'other')

_DIFF_SNIPPET = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
names = json.load(sys.stdin)
json.dump({n: get_diff_for_mutant(n, path=p) for n, p in names}, sys.stdout)
"""


def read_mutmut_section(pyproject: Path) -> dict:
    with open(pyproject, 'rb') as f:
        return tomllib.load(f).get('tool', {}).get('mutmut', {})


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    return '[' + ', '.join(_toml_value(v) for v in value) + ']'


def write_mutmut_section(pyproject: Path, config: dict) -> None:
    """Replace (or add) ``[tool.mutmut]``, keeping every other section."""
    text = pyproject.read_text(encoding='utf-8')
    text = re.sub(
        r'^\[tool\.mutmut\]\n(?:(?!\[).*\n?)*', '', text, flags=re.M
    ).rstrip('\n')
    lines = [f'{k} = {_toml_value(v)}' for k, v in config.items()]
    section = '[tool.mutmut]\n' + '\n'.join(lines) + '\n'
    pyproject.write_text(text + '\n\n' + section, encoding='utf-8')


def status(code) -> str:
    if code in KILLED:
        return 'killed'
    if code in SURVIVED:
        return 'survived'
    if code in TIMEOUT:
        return 'timeout'
    if code in NO_TESTS:
        return 'no_tests'
    return 'other'


def _diffs(copy: Path, names: list[str], module: str) -> dict[str, str]:
    """``mutmut show`` for many mutants in one process (CLI as fallback)."""
    if not names:
        return {}
    payload = json.dumps([[n, module] for n in names])
    proc = subprocess.run(
        [sys.executable, '-c', _DIFF_SNIPPET],
        cwd=copy,
        input=payload,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode == 0:
        return json.loads(proc.stdout)
    return {
        n: subprocess.run(
            [sys.executable, '-m', 'mutmut', 'show', n],
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        for n in names
    }


def collect(copy: Path, module: str) -> dict:
    """Counts, score and the diffs of the mutants that were not killed."""
    meta = copy / 'mutants' / (module + '.meta')
    codes = {}
    if meta.is_file():
        codes = json.loads(meta.read_text())['exit_code_by_key']
    counts = dict.fromkeys(COLUMNS, 0)
    counts['mutants'] = len(codes)
    by_name = {name: status(code) for name, code in codes.items()}
    for name, st in by_name.items():
        counts[st] += 1
    detected = counts['killed'] + counts['timeout']
    counts['score'] = round(detected / len(codes), 3) if codes else None
    alive = sorted(
        (n for n, st in by_name.items() if st not in ('killed', 'timeout')),
        key=_natural_key,
    )
    diffs = _diffs(copy, alive, module)
    counts['not_killed'] = [
        dict(name=n, status=by_name[n], code=codes[n], diff=diffs.get(n, ''))
        for n in alive
    ]
    return counts


def _natural_key(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


def load_average() -> str:
    try:
        return ' '.join(f'{x:.2f}' for x in os.getloadavg())
    except OSError:
        return 'n/a'


def run_meta(root: Path, argv) -> dict:
    def git(*a):
        return subprocess.run(
            ['git', *a], cwd=root, capture_output=True, text=True, timeout=60
        ).stdout.strip()

    try:
        from importlib.metadata import version

        mutmut_version = version('mutmut')
    except Exception:  # not installed: the run itself will say so
        mutmut_version = 'not installed'
    now = datetime.datetime.now(datetime.timezone.utc)
    return dict(
        date=now.strftime('%Y-%m-%d %H:%M UTC'),
        command='python .dev_scripts/mutation_test.py ' + ' '.join(argv[1:]),
        commit=git('rev-parse', '--short', 'HEAD'),
        dirty=bool(git('status', '--porcelain', '--untracked-files=no')),
        mutmut=mutmut_version,
        python=platform.python_version(),
        cpus=os.cpu_count(),
        load_start=load_average(),
    )


def table(results: dict) -> str:
    head = '| module | ' + ' | '.join(COLUMNS) + ' | score | minutes |'
    rows = [head, '|' + '---|' * (len(COLUMNS) + 3)]
    total = dict.fromkeys(COLUMNS, 0)
    for module, r in results.items():
        score = '-' if r['score'] is None else f'{r["score"]:.1%}'
        cells = [str(r[c]) for c in COLUMNS]
        minutes = f'{r["seconds_group"] / 60:.1f}'
        rows.append(f'| {module} | ' + ' | '.join(cells) + f' | {score} | '
                    f'{minutes} |')  # fmt: skip
        for c in COLUMNS:
            total[c] += r[c]
    if total['mutants']:
        score = (total['killed'] + total['timeout']) / total['mutants']
        cells = [str(total[c]) for c in COLUMNS]
        rows.append('| all | ' + ' | '.join(cells) + f' | {score:.1%} | |')
    return '\n'.join(rows)


def write_outputs(out: Path, results: dict, meta: dict) -> None:
    (out / 'results.json').write_text(
        json.dumps(dict(meta=meta, modules=results), indent=1)
    )
    note = (
        f'{meta["date"]}, commit {meta["commit"]}'
        + (' (with uncommitted changes)' if meta['dirty'] else '')
        + f', mutmut {meta["mutmut"]}, {meta["cpus"]} CPUs, load average '
        f'{meta["load_start"]} at start, {meta["load_end"]} at end.\n\n'
        f'    {meta["command"]}\n\n'
        '"minutes" is the time of the mutmut run that tested the module '
        '(modules with the same tests share one run).\n'
    )
    (out / 'table.md').write_text(note + '\n' + table(results) + '\n')
    lines = []
    for module, r in results.items():
        lines.append(f'## {module}\n')
        for m in r['not_killed']:
            lines += [f'### {m["name"]} ({m["status"]})\n', '```diff']
            lines += [m['diff'].strip(), '```\n']
    (out / 'survivors.md').write_text('\n'.join(lines))
