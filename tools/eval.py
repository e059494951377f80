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

CKPT is any file the warm-start loader reads (an mmssl checkpoint, whose
teacher backbone is measured; the DINOv2/DINOv3 hub, timm or HF layouts).
Without it the config's random init is measured, and the output says so:
"trained vs random init" is two commands. A checkpoint that does not hold
the config's backbone stops the tool (exit 1, one line). The last line is
the headline figure (``seg/mIoU: 41.27``); every figure is written to
WORK_DIR/eval_TASK.json, the picture (image | ground truth | prediction;
for rank the spectra) to WORK_DIR/eval_TASK.png. docs/en/evaluation.md
has the details.
"""

import argparse
import os.path as osp

from mmssl.apis import evaluate as eval_tasks
from mmssl.apis.rank_eval import run_rank
from mmssl.checkpoint import add_trusted_argument
from mmssl.config.cli import add_cfg_options_arguments

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
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.task is None:
        parser.error(f'--task is required, one of {", ".join(TASKS)}')
    if args.task in ('seg', 'depth') and not args.data:
        parser.error(f'--task {args.task} needs --data ROOT')
    return args


def main(argv=None) -> dict:
    from mmssl.config.cli import load_tool_config
    from mmssl.evaluation.dense_figure import grid_picture
    from mmssl.setup_env import register_all_modules

    args = parse_args(argv)
    register_all_modules()
    name = osp.splitext(osp.basename(args.config))[0]
    args.work_dir = args.work_dir or osp.join('work_dirs', 'eval', name)
    picture = None
    if args.task in ('knn', 'linear'):
        metrics = eval_tasks.run_knn_task(args)
    elif args.task == 'rank':
        cfg = load_tool_config(
            args.config, args.cfg_options, args.allow_new_keys
        )
        try:
            metrics, picture = run_rank(cfg, args)
        except (FileNotFoundError, ValueError) as err:
            raise SystemExit(f'error: {err}') from None
    elif args.task == 'finetune':
        cfg = load_tool_config(
            args.config, args.cfg_options, args.allow_new_keys
        )
        try:
            metrics = eval_tasks.run_finetune(cfg, args)
        except (ValueError, RuntimeError) as err:
            # e.g. PretrainedStrip: fewer tensors loaded than min_match
            raise SystemExit(f'error: {str(err).splitlines()[0]}') from None
    else:
        cfg = load_tool_config(
            args.config, args.cfg_options, args.allow_new_keys
        )
        run = (
            eval_tasks.run_seg if args.task == 'seg' else eval_tasks.run_depth
        )
        try:
            metrics, samples, k = run(cfg, args)
        except (FileNotFoundError, ValueError, OSError) as err:
            raise SystemExit(f'error: {err}') from None
        picture = grid_picture(samples, args.task, k, args.max_depth)
    for path in eval_tasks.write_outputs(
        args.work_dir, args.task, metrics, picture
    ):
        print(f'wrote {path}')
    for key, value in metrics.items():
        if '/IoU.' not in key:
            print(f'{key}: {value:.4f}')
    headline = eval_tasks.HEADLINE[args.task]
    print(f'{headline}: {metrics[headline]:.2f}')
    return metrics


if __name__ == '__main__':
    main()
