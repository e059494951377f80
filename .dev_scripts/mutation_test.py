"""Mutation-test mmssl's critical modules with mutmut 3, each with its tests.

Usage::

    pip install -r requirements/dev.txt
    python .dev_scripts/mutation_test.py                  # every module below
    python .dev_scripts/mutation_test.py koleo centering  # by name or path
    python .dev_scripts/mutation_test.py --list           # the mapping
    python .dev_scripts/mutation_test.py mmssl/x.py \\
        --map mmssl/x.py=tests/test_x.py,tests/test_y.py::test_z

It prints, per module: mutants, killed, survived, timeout, no tests, other
and the score ``(killed + timeout) / mutants``, and writes ``results.json``,
``table.md`` and ``survivors.md`` (the diff of every mutant that was not
killed) to ``--out`` (default ``work_dirs/mutation``).

What mutmut 3 needs, and how this script provides it (mutmut 3.8):

* Config comes from ``[tool.mutmut]`` in ``pyproject.toml`` of the current
  directory. The repository's section holds the fixed settings; this script
  adds ``only_mutate`` (the chosen files) and
  ``pytest_add_cli_args_test_selection`` (their tests plus ``-m "not slow"``)
  in the copy's ``pyproject.toml``. 3.8 renamed ``paths_to_mutate`` to
  ``source_paths`` and ``tests_dir`` to ``pytest_add_cli_args_test_selection``
  (the old names still work, with a warning).
* mutmut copies ``source_paths`` and ``also_copy`` (plus ``tests/`` and
  ``pyproject.toml``) into ``./mutants/`` and runs pytest in-process with
  ``mutants/`` as working directory and first on ``sys.path``. mmssl has no
  ``src/`` layout and is usually pip-installed in editable mode from another
  checkout: the copy wins only because ``tests/conftest.py`` puts its own
  root (``mutants/``) first on ``sys.path``. mutmut's "forced fail" step
  (every mutated function raises; some test must fail) proves that the
  mutated copy is the one imported. To leave the worktree untouched, the
  whole run happens in a temporary copy of the tracked and untracked,
  not-ignored files (``git ls-files -co --exclude-standard``).
* Trampolines: every function becomes a dispatcher that calls the original
  or the mutant named by ``MUTANT_UNDER_TEST``. Only function and method
  bodies are mutated (module constants, class attributes and non-literal
  default arguments are not), and a function with any decorator other than
  ``@staticmethod``/``@classmethod`` is skipped entirely. In the copy,
  ``mmssl_dev/lift_decorators.py`` rewrites ``@torch.no_grad()`` and a few
  other pure decorators into ``f = deco(f_lifted)``, so that Sinkhorn-Knopp,
  the centre update and the checkpoint context managers are mutated too;
  their mutants are named ``..._lifted__mutmut_N``.
* Test selection: mutmut first runs the selected tests once, recording which
  tests reach each function, then runs every mutant against those tests
  only. Calls made in other processes (``mp.spawn`` ranks, tools run as
  subprocesses) are not recorded, so multi-process tests cannot kill
  mutants; slow tests are deselected (``--include-slow`` keeps them).
  A function that no selected test reaches gives "no tests" mutants.
* Isolation: torch is not fork-safe once its thread pools exist, so
  ``process_isolation = "forkserver"``: a server process imports pytest and
  collects once, then forks one child per mutant. ``OMP_NUM_THREADS=1``.
* Speed: pytest's ``unraisableexception`` plugin runs ``gc.collect()`` five
  times at the end of each session, about 3.5 s per mutant with torch
  loaded, against 0.2 s for a whole small test; it is disabled with
  ``-p no:unraisableexception``.
* Timeouts: mutmut bounds each mutant's CPU time by
  ``(test time + timeout_constant) * timeout_multiplier * 2`` (RLIMIT_CPU)
  and its wall time by half of that; this script also bounds each mutmut
  run (``--run-timeout``).
* Results live in ``mutants/**/*.py.meta`` and are reused when a function's
  hash is unchanged; this script always starts from a fresh copy.

Modules that share the same tests run in one mutmut invocation.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mmssl_dev import mutation_report as report
from mmssl_dev.lift_decorators import lift_source

ROOT = Path(__file__).resolve().parents[1]

LOSS_TESTS = ('tests/test_models/test_losses/test_*.py',)
ALGO_TESTS = (
    'tests/test_models/test_algorithms/test_dino_algorithms.py',
    'tests/test_models/test_algorithms/test_dino_family*.py',
    'tests/test_models/test_algorithms/test_dino_parts.py',
    'tests/test_models/test_algorithms/test_ema_teacher.py',
    # ema_teacher.init_weights applies model.warm_start
    'tests/test_models/test_algorithms/test_warm_start_algorithms.py',
)
KNN_TESTS = ('tests/test_evaluation/test_knn.py',)
# The one place that says which tests guard which module. Entries are paths,
# globs or pytest node ids, relative to the repository root.
MODULE_TESTS: dict[str, tuple[str, ...]] = {
    'mmssl/models/losses/dino_loss.py': LOSS_TESTS,
    'mmssl/models/losses/ibot_patch_loss.py': LOSS_TESTS,
    'mmssl/models/losses/koleo_loss.py': LOSS_TESTS,
    'mmssl/models/losses/centering.py': LOSS_TESTS,
    'mmssl/models/algorithms/dino.py': ALGO_TESTS,
    'mmssl/models/algorithms/dino_family.py': ALGO_TESTS,
    'mmssl/models/algorithms/dino_parts.py': ALGO_TESTS,
    'mmssl/models/algorithms/ema_teacher.py': ALGO_TESTS,
    'mmssl/engine/hooks/teacher_ema_hook.py': (
        'tests/test_engine/test_hooks/test_dino_hooks.py',
    ),
    'mmssl/engine/optimizers/nan_guard_optim_wrapper.py': (
        'tests/test_engine/test_optimizers/test_nan_guard.py',
        'tests/test_models/test_algorithms/test_dino_training.py',
    ),
    # checkpoint policy and I/O (moved from mmssl/utils/checkpoint_io.py)
    'mmssl/checkpoint/policy.py': (
        'tests/test_checkpoint/test_policy.py',
        'tests/test_checkpoint/test_io.py',
    ),
    'mmssl/checkpoint/io.py': (
        'tests/test_checkpoint/test_policy.py',
        'tests/test_checkpoint/test_io.py',
    ),
    # RNG save/restore (moved from AtomicCheckpointHook to the loops)
    'mmssl/engine/resume/rng.py': (
        'tests/test_engine/test_resume/test_resumable_data.py',
        'tests/test_engine/test_runner/test_loops.py',
    ),
    # crash-safe saving and pruning; tests/test_engine/test_resume/
    # test_crash_consistency.py is slow and kills subprocesses, which
    # mutmut cannot follow, so it is not named here
    'mmssl/engine/hooks/atomic_checkpoint_hook.py': (
        'tests/test_engine/test_hooks/test_atomic_checkpoint_hook.py',
    ),
    'mmssl/datasets/transforms/multi_crop.py': (
        'tests/test_datasets/test_transforms/test_multi_crop.py',
        # the Gram-teacher views (gram_size) are tested beside DINOFamily
        'tests/test_models/test_algorithms/test_dino_family.py'
        '::test_multicrop_gram_copies_same_crop_at_high_resolution',
        # the refusal of non-RGB images is tested with the other RGB-only
        # transforms
        'tests/test_datasets/test_transforms/test_multichannel_pipeline.py'
        '::test_rgb_only_transforms_refuse_at_run_time',
    ),
    'mmssl/datasets/transforms/blockwise_mask.py': (
        'tests/test_datasets/test_transforms/test_blockwise_mask.py',
    ),
    'mmssl/evaluation/functional.py': KNN_TESTS,
    'mmssl/evaluation/metrics/knn_accuracy.py': KNN_TESTS,
}
PYTEST_ARGS = ['-p', 'no:unraisableexception', '-p', 'no:cacheprovider']
PLUGIN = 'mutmut_plugin'  # .dev_scripts/mutmut_plugin.py, copied to the root


class SetupError(Exception):
    """A module or test path that does not exist, or a bad argument."""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        'modules',
        nargs='*',
        help='module paths, or parts of them (e.g. "koleo"); default: all',
    )
    p.add_argument(
        '--map',
        action='append',
        default=[],
        metavar='MODULE=TEST[,TEST...]',
        help='set the tests of a module (repeatable); adds the module',
    )
    p.add_argument('--list', action='store_true', help='print the mapping')
    p.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    p.add_argument('--include-slow', action='store_true')
    p.add_argument('--out', default=str(ROOT / 'work_dirs' / 'mutation'))
    p.add_argument(
        '--keep',
        action='store_true',
        help='keep the copy, with the mutants/ of run N as mutants-N',
    )
    p.add_argument(
        '--run-timeout',
        type=float,
        default=3000,
        help='seconds for one mutmut run (default 3000)',
    )
    return p.parse_args(argv)


def build_mapping(args) -> dict[str, tuple[str, ...]]:
    """The modules to test with their tests, from the names and ``--map``."""
    mapping = dict(MODULE_TESTS)
    extra = {}
    for item in args.map:
        module, sep, tests = item.partition('=')
        if not sep or not tests:
            raise SetupError(f'--map {item!r}: expected MODULE=TEST[,TEST]')
        extra[module] = tuple(t for t in tests.split(',') if t)
    mapping.update(extra)
    if not args.modules and not extra:
        return mapping
    chosen = dict(extra)
    for name in args.modules:
        hits = [m for m in mapping if name == m or name in m]
        if not hits:
            raise SetupError(
                f'{name!r} matches no module; known: ' + ', '.join(mapping)
            )
        chosen.update({m: mapping[m] for m in hits})
    return chosen


def resolve_tests(entries: tuple[str, ...], root: Path) -> list[str]:
    """Expand globs; check that every file exists. Node ids are kept."""
    out = []
    for entry in entries:
        path, sep, node = entry.partition('::')
        matches = sorted(glob.glob(path, root_dir=root))
        if not matches:
            raise SetupError(f'test path {path!r} does not exist')
        out += [m + sep + node for m in matches]
    return out


def check_paths(mapping, root: Path) -> dict[str, list[str]]:
    """Resolve every test entry; one error listing every missing path."""
    problems, resolved = [], {}
    for module, tests in mapping.items():
        if not (root / module).is_file():
            problems.append(f'module {module} does not exist')
        try:
            resolved[module] = resolve_tests(tests, root)
        except SetupError as e:
            problems.append(f'{module}: {e}')
    if problems:
        raise SetupError(
            'missing paths (moved? update MODULE_TESTS in '
            '.dev_scripts/mutation_test.py or pass --map MODULE=TESTS):\n  '
            + '\n  '.join(problems)
        )
    return resolved


def make_copy(root: Path, dest: Path) -> None:
    """Copy tracked and untracked, not-ignored files of ``root``."""
    files = subprocess.run(
        ['git', 'ls-files', '-co', '--exclude-standard', '-z'],
        cwd=root,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.split(b'\0')
    for name in filter(None, files):
        src = root / os.fsdecode(name)
        if src.is_file():  # tracked but deleted files are skipped
            (dest / src.relative_to(root)).parent.mkdir(
                parents=True, exist_ok=True
            )
            shutil.copy2(src, dest / src.relative_to(root))


def write_config(copy: Path, modules, tests, include_slow: bool) -> None:
    """Replace ``[tool.mutmut]`` of the copy's pyproject.toml."""
    base = report.read_mutmut_section(copy / 'pyproject.toml')
    base.setdefault('source_paths', ['mmssl/'])
    base.setdefault('process_isolation', 'forkserver')
    base['also_copy'] = base.get('also_copy', []) + [PLUGIN + '.py']
    pytest_args = list(base.get('pytest_add_cli_args', []))
    for flag, value in zip(PYTEST_ARGS[::2], PYTEST_ARGS[1::2]):
        if value not in pytest_args:
            pytest_args += [flag, value]
    base['pytest_add_cli_args'] = pytest_args + ['-p', PLUGIN]
    base['only_mutate'] = list(modules)
    marker = [] if include_slow else ['-m', 'not slow']
    base['pytest_add_cli_args_test_selection'] = marker + list(tests)
    report.write_mutmut_section(copy / 'pyproject.toml', base)


def lift(copy: Path, modules) -> dict[str, list[str]]:
    """Lift the decorators of the chosen modules in the copy."""
    lifted = {}
    for module in modules:
        path = copy / module
        code, names = lift_source(path.read_text(encoding='utf-8'))
        path.write_text(code, encoding='utf-8')
        lifted[module] = names
    return lifted


def run_group(copy: Path, modules, tests, args, log: Path) -> float:
    """One mutmut run over ``modules`` with ``tests``; returns seconds."""
    shutil.rmtree(copy / 'mutants', ignore_errors=True)
    write_config(copy, modules, tests, args.include_slow)
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')
    env.pop('MUTANT_UNDER_TEST', None)
    cmd = [sys.executable, '-m', 'mutmut', 'run']
    cmd += ['--max-children', str(args.jobs)]
    start = time.monotonic()
    with open(log, 'w') as f:
        try:
            proc = subprocess.run(
                cmd,
                cwd=copy,
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=args.run_timeout,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f'mutmut ran past --run-timeout={args.run_timeout}s; log: '
                f'{log}'
            ) from None
    if proc.returncode != 0:
        tail = log.read_text(errors='replace')[-3000:]
        raise RuntimeError(
            f'mutmut exited with {proc.returncode} for {list(modules)}; '
            f'log: {log}\n...{tail}'
        )
    return time.monotonic() - start


def group_by_tests(resolved) -> dict[tuple[str, ...], list[str]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for module, tests in resolved.items():
        groups.setdefault(tuple(tests), []).append(module)
    return groups


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        mapping = build_mapping(args)
        resolved = check_paths(mapping, ROOT)
    except SetupError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    if args.list:
        for module, tests in resolved.items():
            print(f'{module}\n    ' + '\n    '.join(tests))
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy = Path(tempfile.mkdtemp(prefix='mmssl-mutation-'))
    meta = report.run_meta(ROOT, sys.argv if argv is None else argv)
    print(f'copy: {copy}; load average at start: {meta["load_start"]}')
    results = {}
    try:
        make_copy(ROOT, copy)
        shutil.copy(Path(__file__).with_name(PLUGIN + '.py'), copy)
        lifted = lift(copy, resolved)
        groups = group_by_tests(resolved)
        for index, (tests, modules) in enumerate(groups.items()):
            print(f'mutmut: {", ".join(modules)}', flush=True)
            log = out / f'mutmut-{index}.log'
            seconds = run_group(copy, modules, tests, args, log)
            for module in modules:
                counts = report.collect(copy, module)
                counts.update(tests=list(tests), lifted=lifted[module])
                counts.update(run=index, seconds_group=round(seconds))
                results[module] = counts
            print(f'    done in {seconds / 60:.1f} min', flush=True)
            if args.keep:  # the next run starts from an empty mutants/
                (copy / 'mutants').rename(copy / f'mutants-{index}')
            meta['load_end'] = report.load_average()
            report.write_outputs(out, results, meta)  # after every group
    except RuntimeError as e:
        print(f'error: {e}', file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f'kept the copy: {copy}')
        else:
            shutil.rmtree(copy, ignore_errors=True)
    print(report.table(results))
    print(f'load average at end: {meta["load_end"]}; files in {out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
