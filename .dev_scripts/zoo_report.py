"""Measure the demos and write the model-zoo table (random vs trained).

For each demo config, on one bundled set (``--dataset digits`` =
data/demo, ``shapes`` = data/shapes), this runs as subprocesses:

1. kNN of the network at random init (``tools/misc/knn_eval.py``), and
   where the backbone has BatchNorm, at random init with its running
   statistics re-estimated on the training split (``--bn-recalibrate``):
   the baseline a trained BatchNorm network has to beat, since training
   at learning rate 0 already adapts those statistics;
2. the demo's training (``tools/train.py``), timed;
3. kNN of the trained checkpoint (``tools/misc/knn_eval.py --checkpoint``);
4. with ``--linear``, the linear probe of the same three networks
   (random init, random init with BatchNorm recalibrated, trained):
   logistic regression on the frozen kNN features (``knn_eval.py
   --linear``, in the same call as the kNN), which fits any backbone
   and is the only probe that can recalibrate BatchNorm, so every
   backbone with BatchNorm gets it; a BatchNorm-free backbone gets a
   probe config (configs/benchmarks/linear_probe/) where one fits it,
   unless ``--frozen-linear``.

Results go to a JSON file (``--results``), one entry per dataset and
config, saved after every stage, so an interrupted run resumes where it
stopped; rows already measured with the same settings are skipped unless
``--force`` (a row measured before the BatchNorm baselines existed only
gets those stages; linear figures of another probe are measured again).
The markdown table between ``<!-- zoo-table:DATASET -->`` and
``<!-- /zoo-table:DATASET -->`` in ``--doc`` is then rewritten from the
JSON: every default demo gets a row, "not measured yet" where nothing
was.

    python .dev_scripts/zoo_report.py --dataset shapes --linear \\
        configs/simclr/simclr_resnet18-w16_1xb64-10e_demo.py

On shapes a demo's sibling ``*_shapes_demo.py`` (its shapes recipe) is
trained when there is one; otherwise only the data folders are
overridden. ``--max-iters N`` trains N iterations (an iteration-based
loop; the schedule is cut short), for quick or partial measurements.
"""

import argparse
import ast
import glob
import json
import os
import os.path as osp
import shlex
import subprocess
import sys
import time
from typing import Dict, List, Optional

from mmssl_dev.zoo_probes import (  # noqa: F401
    FROZEN,
    PROBES,
    ROOT,
    choose_probe,
    has_batchnorm,
    memory_options,
    probe_config,
)
from mmssl_dev.zoo_table import (  # noqa: F401
    NOT_MEASURED,
    table,
    write_table,
)

DATA = {'digits': 'data/demo', 'shapes': 'data/shapes'}


#: Demo folders whose demos read their own synthetic sets (3D volumes,
#: 5-channel TIFFs), so they train on neither bundled image set.
OWN_DATA_FOLDERS = ('multichannel', 'volumetric')


def default_configs() -> List[str]:
    """All digits demos: ``configs/*/*_demo.py`` minus shapes and dense
    variants (the dense ones: ``dense_zoo.py``) and the demos of
    :data:`OWN_DATA_FOLDERS`."""
    found = glob.glob(osp.join(ROOT, 'configs', '*', '*_demo.py'))
    return sorted(
        osp.relpath(p, ROOT)
        for p in found
        if '_shapes_demo' not in p
        and '_dense_demo' not in p
        and osp.basename(osp.dirname(p)) not in OWN_DATA_FOLDERS
    )


def data_options(root: str) -> List[str]:
    """``--cfg-options`` that point training and kNN at ``root``."""
    options = [f'train_dataloader.dataset.data_root={root}/train']
    for loader in ('val_dataloader', 'test_dataloader'):
        options += [
            f'{loader}.dataset.bank.data_root={root}',
            f'{loader}.dataset.query.data_root={root}',
        ]
    return options


def resolve(config: str, dataset: str, data_root=None) -> Dict:
    """Config to train on ``dataset`` and the overrides it needs.

    ``data_root`` (a copy of the set elsewhere) overrides every data folder.
    """
    if dataset == 'digits' and not data_root:
        return {'config': config, 'options': []}
    stem = osp.basename(config).split('_')[0]
    variants = glob.glob(
        osp.join(ROOT, osp.dirname(config), f'{stem}_*_shapes_demo.py')
    )
    if dataset == 'shapes' and len(variants) == 1:
        config, root = osp.relpath(variants[0], ROOT), data_root
    else:  # the digits recipe, on a copy or on the shapes folders
        root = data_root or DATA[dataset]
    if not root:  # a shapes variant reading its own folders
        return {'config': config, 'options': []}
    # a memory bank sized for the digits is resized for the folder
    options = data_options(root) + memory_options(config, f'{root}/train')
    return {'config': config, 'options': options}


def run(cmd: List[str], log: str, timeout: float) -> str:
    """Run ``cmd`` from the checkout root; return stdout, raise on error."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.setdefault('OMP_NUM_THREADS', '1')
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    with open(log, 'a') as f:
        f.write(f'$ {shlex.join(cmd)}\n{proc.stdout}\n{proc.stderr}\n')
    if proc.returncode:
        raise RuntimeError(f'{shlex.join(cmd)} failed, see {log}')
    return proc.stdout


def knn(cfg: Dict, ckpt, log: str, timeout: float, *flags: str) -> Dict:
    """``{'knn/top1': .., 'knn/top5': ..}`` as knn_eval.py prints it."""
    cmd = [sys.executable, 'tools/misc/knn_eval.py', cfg['config'], *flags]
    if ckpt:
        cmd += ['--checkpoint', ckpt]
    if cfg['options']:
        cmd += ['--cfg-options', *cfg['options']]
    out = run(cmd, log, timeout)
    lines = [s for s in out.splitlines() if s.startswith('{')]
    return ast.literal_eval(lines[-1])


def iter_options(max_iters: Optional[int]) -> List[str]:
    """``--cfg-options`` that turn a run into ``max_iters`` iterations."""
    if not max_iters:
        return []
    n = max_iters
    return [
        f"train_cfg=dict(_delete_=True,type='IterBasedTrainLoop',"
        f'max_iters={n},'
        f'val_interval={n})',
        f"default_hooks.checkpoint=dict(type='CheckpointHook',"
        f'by_epoch=False,interval={n},max_keep_ckpts=1)',
        'log_processor.by_epoch=False',
    ]


def train(cfg: Dict, work_dir: str, args, log: str) -> Dict:
    """Train the demo; return the last checkpoint and the wall time."""
    cmd = [sys.executable, 'tools/train.py', cfg['config']]
    # --max-iters adds keys the demos do not have (log_processor.by_epoch)
    cmd += ['--work-dir', work_dir, '--allow-new-keys']
    options = cfg['options'] + iter_options(args.max_iters)
    # the demos end with a kNN evaluation: measured separately here
    options.append('val_cfg=None')
    options += ['val_dataloader=None', 'val_evaluator=None']
    cmd += ['--cfg-options', *options]
    start = time.time()
    run(cmd, log, args.timeout)
    wall = time.time() - start
    with open(osp.join(work_dir, 'last_checkpoint')) as f:
        ckpt = f.read().strip()
    if ckpt.startswith(ROOT + os.sep):
        ckpt = osp.relpath(ckpt, ROOT)
    return {'checkpoint': ckpt, 'train_s': round(wall, 1)}


def linear(probe: str, ckpt, work_dir: str, args, log: str) -> Dict:
    """Top-1 / top-5 of the linear probe on ``ckpt`` (None: random)."""
    init = (
        f'model.backbone.init_cfg.checkpoint={ckpt}'
        if ckpt
        else 'model.backbone.init_cfg=None'
    )
    cmd = [sys.executable, 'tools/train.py', probe, '--work-dir', work_dir]
    cmd.append('--allow-new-keys')
    options = [init, *iter_options(args.probe_max_iters)]
    if args.data_root:
        options += [
            f'{loader}.dataset.data_root={args.data_root}'
            for loader in ('train_dataloader', 'val_dataloader')
        ]
    cmd += ['--cfg-options', *options]
    run(cmd, log, args.timeout)
    scalars = glob.glob(osp.join(work_dir, '*', 'vis_data', 'scalars.json'))
    with open(max(scalars, key=osp.getmtime)) as f:
        rows = [json.loads(s) for s in f if 'accuracy/top1' in s]
    last = rows[-1]
    return {k: last[k] for k in ('accuracy/top1', 'accuracy/top5')}


def settings(args) -> Dict:
    """What a measured row depends on; a change means measuring again."""
    return {
        'max_iters': args.max_iters,
        'linear': args.linear,
        'probe_max_iters': args.probe_max_iters,
        # only when set, so rows measured before the flag existed stay valid
        **({'frozen_linear': True} if args.frozen_linear else {}),
    }


def evaluate(row: Dict, key: str, cfg: Dict, ckpt, log, args, *flags):
    """Fill ``row[key + '_knn']`` and, with the frozen probe,
    ``row[key + '_linear']`` from one ``knn_eval.py`` call."""
    need_knn = f'{key}_knn' not in row
    need_linear = row['probe'] == FROZEN and f'{key}_linear' not in row
    if not (need_knn or need_linear):
        return
    linear_flag = ['--linear'] if need_linear else []
    out = knn(cfg, ckpt, log, args.timeout, *flags, *linear_flag)
    if need_knn:
        row[f'{key}_knn'] = {k: out[k] for k in ('knn/top1', 'knn/top5')}
    if need_linear:
        row[f'{key}_linear'] = {
            f'accuracy/{k}': out[f'linear/{k}'] for k in ('top1', 'top5')
        }


LINEAR_KEYS = ('random_linear', 'bnrecal_linear', 'trained_linear')


def measure(config: str, args, row: Dict, save) -> None:
    """Run the missing stages of one row, saving after each."""
    work = osp.join(args.work_root, args.dataset, osp.basename(config)[:-3])
    os.makedirs(work, exist_ok=True)
    log = osp.join(work, 'zoo_report.log')
    cfg = resolve(config, args.dataset, args.data_root)
    row['trained_config'] = cfg['config']
    bn = has_batchnorm(cfg['config'])
    probe = choose_probe(cfg['config'], args, bn)
    if row.get('probe') != probe:  # linear figures of another probe
        for key in LINEAR_KEYS:
            row.pop(key, None)
    row['probe'] = probe
    evaluate(row, 'random', cfg, None, log, args)
    save()
    if bn:  # the baseline of a BatchNorm network
        evaluate(row, 'bnrecal', cfg, None, log, args, '--bn-recalibrate')
    else:  # None: no BatchNorm in the backbone
        row['bnrecal_knn'] = None
        if probe:
            row['bnrecal_linear'] = None
    save()
    if 'checkpoint' not in row:
        row.update(train(cfg, osp.join(work, 'train'), args, log))
        save()
    evaluate(row, 'trained', cfg, row['checkpoint'], log, args)
    save()
    for key, ckpt in (('random', None), ('trained', row['checkpoint'])):
        if probe and f'{key}_linear' not in row:  # a probe config
            probe_dir = osp.join(work, f'linear_{key}')
            row[f'{key}_linear'] = linear(probe, ckpt, probe_dir, args, log)
            save()
    row['status'] = 'done'
    save()


def command(config: str, args) -> str:
    """The command line that reproduces one row."""
    parts = ['python .dev_scripts/zoo_report.py', config]
    parts += ['--dataset', args.dataset]
    if args.linear:
        parts.append('--linear')
    if args.max_iters:
        parts += ['--max-iters', str(args.max_iters)]
    if args.linear and args.probe_max_iters:
        parts += ['--probe-max-iters', str(args.probe_max_iters)]
    if args.linear and args.frozen_linear:
        parts.append('--frozen-linear')
    return ' '.join(parts)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('configs', nargs='*', help='default: every demo')
    parser.add_argument('--dataset', choices=sorted(DATA), default='digits')
    parser.add_argument('--linear', action='store_true')
    parser.add_argument(
        '--frozen-linear',
        action='store_true',
        help='with --linear: knn_eval.py --linear for every demo, even '
        'where a probe config fits',
    )
    parser.add_argument('--max-iters', type=int, default=None)
    parser.add_argument('--probe-max-iters', type=int, default=None)
    parser.add_argument('--force', action='store_true')
    parser.add_argument('--work-root', default='work_dirs/zoo')
    parser.add_argument(
        '--doc', default=osp.join(ROOT, 'docs', 'en', 'model_zoo.md')
    )
    parser.add_argument('--results', default=None, help='default: DOC.json')
    parser.add_argument(
        '--data-root',
        default=None,
        help='the set is elsewhere than data/demo or data/shapes',
    )
    parser.add_argument(
        '--table-only',
        action='store_true',
        help='measure nothing, rewrite the table from the JSON',
    )
    parser.add_argument(
        '--timeout', type=float, default=3600.0, help='per subprocess (s)'
    )
    return parser.parse_args(argv)


def complete(row: Dict, args) -> bool:
    """Whether a row has every stage (rows measured before the BatchNorm
    baselines existed only get those stages)."""
    stages = ['bnrecal_knn'] + (['bnrecal_linear'] if args.linear else [])
    return row.get('status') == 'done' and all(k in row for k in stages)


def load(results_file: str) -> Dict:
    """The results JSON, ``{}`` if there is none yet."""
    if not osp.exists(results_file):
        return {}
    with open(results_file) as f:
        return json.load(f)


def recipe_changed(row: Dict, config: str, args) -> bool:
    """Whether ``row`` was measured with another config than the one
    its demo trains now (e.g. a shapes sibling added since): then every
    stage is measured again, none mixed from the two recipes."""
    trained = row.get('trained_config')
    now = resolve(config, args.dataset, args.data_root)['config']
    return trained is not None and trained != now


def main(argv=None) -> Dict:
    args = parse_args(argv)
    results_file = args.results or osp.splitext(args.doc)[0] + '.json'
    rows = load(results_file).get(args.dataset, {})
    mine = {}

    def save() -> None:
        # re-read so that parallel runs on other configs are kept
        results = load(results_file)
        results.setdefault(args.dataset, {}).update(mine)
        with open(results_file, 'w') as f:
            json.dump(results, f, indent=1, sort_keys=True)

    configs = [] if args.table_only else args.configs or default_configs()
    for config in configs:
        row = rows.get(config, {})
        if (
            args.force
            or row.get('settings') != settings(args)
            or recipe_changed(row, config, args)
        ):
            row = {'settings': settings(args)}
        if complete(row, args):
            print(f'{config}: measured already (--force to redo)')
            continue
        row['command'] = command(config, args)
        mine[config] = row
        try:
            measure(config, args, row, save)
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            print(f'{config}: {err}', file=sys.stderr)
        print(config, json.dumps(row))
    rows = load(results_file).get(args.dataset, {})
    write_table(args.doc, args.dataset, table(rows, default_configs()))
    return rows


if __name__ == '__main__':
    main()
