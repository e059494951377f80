"""One evaluation entry point: kNN, linear, segmentation and depth probes.

    python tools/eval.py CONFIG [--checkpoint CKPT] --task TASK \
        [--data ROOT] [--work-dir DIR] [--cfg-options KEY=VALUE ...]

TASK:
  knn     weighted kNN top-1/top-5 (k=20, T=0.07) on ROOT/train (bank)
          and ROOT/val (queries), labelled folders <split>/<class>/<image>;
          without --data, the config's test data
  linear  kNN and a logistic-regression probe on the same features
  seg     frozen linear segmentation probe (DINOv2 protocol), mIoU;
          ROOT in the ADE20K layout (--layout voc|cityscapes for others)
  depth   frozen linear depth probe (256 bins or regression), RMSE,
          AbsRel, delta1; ROOT with images/ + depth/ (--layout nyu: the
          NYUv2 BTS layout)
  finetune  fine-tune end to end with a fine-tune config
          (configs/benchmarks/finetune/), validation top-1; ROOT with
          train/ and val/ class folders (default: the config's data)
  rank    RankMe (effective rank) and spread of the features, no labels
          needed: ROOT any folder of images (default: the config's
          training folder); with CKPT also its random init, both
          spectra in the picture

CKPT is any file the warm-start loader reads (an mmssl checkpoint; the
DINOv2/DINOv3 hub, timm or HF layouts). Of a checkpoint with two networks
the one its paper evaluates is measured: the teacher of the DINO family,
the online network of BYOL and MoCo; --network momentum takes the momentum
encoder. The output names the network taken.
Without it the config's random init is measured, and the output says so:
"trained vs random init" is two commands. A checkpoint that does not hold
the config's backbone, or a file that is no complete checkpoint, stops
the tool (exit 2, one line) before anything is computed, as every user
error does (--debug: the traceback of a config value refused). The
last line is the headline figure with the data and the weights
(``knn/top1: 94.99  [data data/demo (1438 bank / 359 queries); weights
epoch_10.pth (sha256 0123456789ab)]``). Each run writes its own
WORK_DIR/eval_TASK_<date>_<time>.json (every figure, and under ``run``
the config, checkpoint or "random init", its SHA-256, the data and its
counts, the date and the command) and picture (image | ground truth |
prediction; for rank the spectra), and copies them to
WORK_DIR/eval_TASK.json and .png (the latest run). docs/en/evaluation.md
has the details.
"""

import argparse
import os.path as osp
import sys

from mmssl.checkpoint import add_trusted_argument
from mmssl.config.cli import add_cfg_options_arguments
from mmssl.errors import one_line_exit
from mmssl.evaluation.tasks import evaluate as eval_tasks
from mmssl.evaluation.tasks.rank_eval import run_rank

TASKS = ('knn', 'linear', 'seg', 'depth', 'finetune', 'rank')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.splitlines()[1:]),
    )
    parser.add_argument('config')
    parser.add_argument('--task', choices=TASKS, help='required')
    parser.add_argument('--checkpoint', help='weights; random init if none')
    parser.add_argument('--data', help='data root (see TASK)')
    parser.add_argument('--work-dir', help='default work_dirs/eval/NAME')
    parser.add_argument(
        '--prefix', help="backbone prefix in CKPT ('' for a bare one)"
    )
    parser.add_argument(
        '--network',
        choices=('teacher', 'online', 'momentum'),
        help='network of CKPT to measure; default: the teacher (DINO '
        'family), else the online network (BYOL, MoCo); momentum: the '
        'momentum encoder of BYOL, MoCo, DenseCL',
    )
    add = parser.add_argument_group('dense probes (seg, depth)').add_argument
    add('--layout', help='seg: ade20k|voc|cityscapes; depth: folder|nyu')
    add('--num-classes', type=int, help='default: ROOT/classes.txt or 150')
    add(
        '--keep-zero-label',
        action='store_true',
        help='ade20k: class id 0 is a class, not "unlabeled"',
    )
    add('--crop', type=int, help="default: the backbone's img_size")
    add('--n-layers', type=int, default=1, help='last blocks (1 or 4)')
    add('--probe-iters', type=int, default=1000)
    add(
        '--probe-lr',
        type=float,
        nargs='+',
        default=[1e-3, 1e-2, 1e-1],
        help='head learning rate; several: the best on a held-out fifth '
        'of the training images (default: best of 0.001 0.01 0.1)',
    )
    add('--batch-size', type=int, default=16)
    add('--max-train', type=int, help='use the first N training images')
    add('--max-val', type=int, help='use the first N validation images')
    add(
        '--features',
        choices=('backbone', 'pixels'),
        default='backbone',
        help="'pixels': the raw-pixel baseline (each patch's pixels)",
    )
    add('--depth-mode', choices=('bins', 'regression'), default='bins')
    add('--n-bins', type=int, default=256)
    add('--max-depth', type=float, default=10.0, help='metres')
    add('--no-cls', action='store_true', help='depth: patch tokens only')
    parser.add_argument_group('rank').add_argument(
        '--max-images',
        type=int,
        default=2048,
        help='evenly spaced images of the folder (default 2048)',
    )
    parser.add_argument(
        '--threads',
        type=int,
        help="torch CPU threads (default: this process's share of the "
        'cores, less one per dataloader worker; OMP_NUM_THREADS is '
        'respected)',
    )
    parser.add_argument(
        '--baseline',
        action='store_true',
        help='knn, linear, seg, depth: with --checkpoint, also measure the '
        "config's random init in the same run and print the difference",
    )
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a user error instead of one line',
    )
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.task is None:
        parser.error(f'--task is required, one of {", ".join(TASKS)}')
    if args.task in ('seg', 'depth') and not args.data:
        parser.error(f'--task {args.task} needs --data ROOT')
    return args


def refuse(err: ValueError, cfg, args: argparse.Namespace) -> None:
    """A value the config gives and the build refused: one line with the
    nearest valid values, exit 2 (``--debug``: the traceback); any other
    ValueError: its message (:func:`run_checked` exits 2 with it)."""
    from mmssl.errors import (
        config_build_error,
        find_config_value,
        root_message,
    )

    if not find_config_value(cfg, root_message(err)):
        raise SystemExit(f'error: {err}') from None
    if args.debug:
        raise err
    error = config_build_error(err, cfg)
    print(f'error: {error}', file=sys.stderr, flush=True)
    sys.exit(error.exit_code)


def run_task(args: argparse.Namespace):
    """Run ``args.task``; ``(metrics, picture or None)``."""
    from mmssl.config import load_config
    from mmssl.evaluation.dense_figure import grid_picture

    if args.task in ('knn', 'linear'):
        return eval_tasks.run_knn_task(args), None
    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    if args.task == 'rank':
        try:
            return run_rank(cfg, args)
        except FileNotFoundError as err:
            raise SystemExit(f'error: {err}') from None
        except ValueError as err:
            refuse(err, cfg, args)
    if args.task == 'finetune':
        try:
            return eval_tasks.run_finetune(cfg, args), None
        except (ValueError, RuntimeError) as err:
            # e.g. PretrainedStrip: fewer tensors loaded than min_match
            raise SystemExit(f'error: {str(err).splitlines()[0]}') from None
    run = eval_tasks.run_seg if args.task == 'seg' else eval_tasks.run_depth
    try:
        metrics, samples, k = run(cfg, args)
    except (FileNotFoundError, OSError) as err:
        raise SystemExit(f'error: {err}') from None
    except ValueError as err:
        refuse(err, cfg, args)
    weights = (
        osp.basename(args.checkpoint) if args.checkpoint else ('random init')
    )
    key = eval_tasks.HEADLINE[args.task]
    title = f'{key} {metrics[key]:.2f} | {weights} | {args.data}'
    picture = grid_picture(samples, args.task, k, args.max_depth, title=title)
    return metrics, picture


def run_checked(args: argparse.Namespace):
    """:func:`run_task`; what it leaves in a new work dir is removed when
    it fails, and a config value the build refuses is one line (exit 2)
    unless ``--debug``."""
    from mmssl.config import load_config
    from mmssl.engine.runner.lifecycle import WorkDirTidy
    from mmssl.errors import BUILD_ERRORS, config_build_error

    tidy = WorkDirTidy(args.work_dir)
    try:
        return run_task(args)
    except BUILD_ERRORS as exc:
        tidy.tidy()
        if args.debug:
            raise
        cfg = load_config(
            args.config,
            args.cfg_options,
            args.allow_new_keys,
            exit_on_error=True,
        )
        error = config_build_error(exc, cfg)
        print(f'error: {error}', file=sys.stderr, flush=True)
        sys.exit(error.exit_code)
    except FileNotFoundError as err:  # e.g. --data without train/ val/
        tidy.tidy()
        if args.debug:
            raise
        hint = ''
        if args.task in ('knn', 'linear'):
            hint = (
                ' --data ROOT takes ROOT/train/<class>/<image> (the bank) '
                'and ROOT/val/<class>/<image> (the queries).'
            )
        print(f'error: {err}{hint}', file=sys.stderr, flush=True)
        sys.exit(2)
    except SystemExit as exc:
        tidy.tidy()
        if isinstance(exc.code, str):  # a user error said in one line
            one_line_exit(exc.code)
        raise


#: Tasks whose --baseline measures the random init in the same run
#: (rank always does; finetune trains, far from cheap).
BASELINE_TASKS = ('knn', 'linear', 'seg', 'depth')

#: The floor of the data beside each headline: its key, what it is.
FLOORS = {
    'knn': ('knn/floor_top1', "the bank's most frequent class for all"),
    'linear': ('knn/floor_top1', "the bank's most frequent class for all"),
    'seg': ('seg/floor_mIoU', 'the most frequent class everywhere'),
    'depth': ('depth/floor_rmse', 'the mean training depth everywhere'),
}


def random_init_metrics(args: argparse.Namespace) -> dict:
    """The headline of the config's random init on the same data:
    ``{'TASK/random_init_NAME': value}``."""
    import copy

    print('--baseline: the same measurement at random init')
    base = copy.copy(args)
    base.checkpoint, base.counts = None, {}
    base_metrics, _ = run_checked(base)
    key = eval_tasks.HEADLINE[args.task]
    task, name = key.split('/')
    return {f'{task}/random_init_{name}': base_metrics[key]}


def comparison_lines(task: str, metrics: dict) -> list:
    """The floor of the data and, after --baseline, the random init,
    each with its difference from the headline figure."""
    key = eval_tasks.HEADLINE[task]
    value, lines = metrics[key], []
    if task in FLOORS and FLOORS[task][0] in metrics:
        floor_key, what = FLOORS[task]
        floor = metrics[floor_key]
        lines.append(
            f'floor of the data ({what}): {key.split("/")[1]} {floor:.2f}, '
            f'{key} {value - floor:+.2f} from it'
        )
    task_, name = key.split('/')
    base = metrics.get(f'{task_}/random_init_{name}')
    if base is not None:
        lines.append(
            f'random init of the same config: {name} {base:.2f}, '
            f'{key} {value - base:+.2f} from it'
        )
    return lines


def main(argv=None) -> dict:
    from mmengine.logging import MMLogger

    from mmssl.engine.runner.console import shorten_console
    from mmssl.engine.runner.workers import fit_threads_to_machine
    from mmssl.evaluation.records import headline, run_record, write_result
    from mmssl.setup_env import register_all_modules

    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    register_all_modules()
    # no per-parameter init_weights records on the console
    shorten_console(MMLogger.get_current_instance())
    name = osp.splitext(osp.basename(args.config))[0]
    args.work_dir = args.work_dir or osp.join('work_dirs', 'eval', name)
    if args.checkpoint:  # before anything is computed
        from mmssl.errors import checkpoint_file_error

        error = checkpoint_file_error(args.checkpoint, '--checkpoint')
        if error:
            one_line_exit(str(error))
    if args.task not in ('knn', 'linear', 'finetune'):  # no runner: here
        note = fit_threads_to_machine(threads=args.threads)
        if note:
            print(note)
    args.counts = {}
    metrics, picture = run_checked(args)
    if args.baseline and args.checkpoint and args.task in BASELINE_TASKS:
        metrics.update(random_init_metrics(args))
    record = run_record(
        args.task,
        args.config,
        args.checkpoint,
        args.data,
        args.counts,
        ['tools/eval.py'] + argv,
    )
    for path in write_result(
        args.work_dir, args.task, metrics, record, picture
    ):
        print(f'wrote {path}')
    key = eval_tasks.HEADLINE[args.task]
    for name, value in metrics.items():
        if '/IoU.' not in name and name != key:
            print(f'{name}: {value:.4f}')
    for line in comparison_lines(args.task, metrics):
        print(line)
    print(headline(key, metrics[key], record))
    return metrics


if __name__ == '__main__':
    main()
