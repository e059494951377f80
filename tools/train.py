"""Train a self-supervised model from a config.

One process (CPU or one GPU)::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp]
        [--auto-scale-lr [linear|sqrt]] [--seed N] [--deterministic]
        [--vis tensorboard|wandb] [--dry-run] [--debug]
        [--cfg-options KEY=VALUE ...] [--allow-new-keys]

A user error (a bad config path, data_root or checkpoint) prints one line,
``error: ...``, and exits with status 2 (1 when the run cannot start now);
``--debug`` shows its traceback instead.

Everything it does to the config is :func:`mmssl.apis.prepare_train_cfg`,
which Python users call too (docs/en/get_started.md).

Several processes: ``bash tools/dist_train.sh CONFIG N [ARGS]`` (torchrun,
``--launcher pytorch``) or ``tools/slurm_train.sh`` (``--launcher slurm``).
See docs/en/distributed.md.
"""

import argparse
import os
import os.path as osp
import sys

from mmssl.config import add_cfg_options_arguments

#: Flags passed on to :func:`mmssl.apis.prepare_train_cfg` as keywords.
PREPARE_ARGS = (
    'work_dir',
    'resume',
    'amp',
    'auto_scale_lr',
    'seed',
    'deterministic',
    'launcher',
    'cfg_options',
    'allow_new_keys',
    'checkpoint_every_minutes',
    'vis',
    'max_epochs',
    'max_iters',
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Train a self-supervised model (mmssl).'
    )
    parser.add_argument('config', help='config file path')
    parser.add_argument(
        '--work-dir',
        help="folder for logs and checkpoints; default: the config's "
        'work_dir, else ./work_dirs/<config file name without .py>',
    )
    parser.add_argument(
        '--resume',
        nargs='?',
        const='auto',
        default=None,
        metavar='CHECKPOINT',
        help='resume from CHECKPOINT (a file, or a sharded checkpoint '
        'folder); without a value, from the newest complete checkpoint in '
        'the work dir (training starts from scratch, with a message, when '
        'there is none)',
    )
    parser.add_argument(
        '--amp',
        action='store_true',
        help='mixed precision: AmpOptimWrapper (float16) on GPU, bfloat16 '
        'autocast on CPU',
    )
    parser.add_argument(
        '--auto-scale-lr',
        nargs='?',
        const=True,
        default=None,
        choices=['linear', 'sqrt'],
        help='scale the lr by (world size x batch_size) / '
        "auto_scale_lr.base_batch_size with the config's auto_scale_lr.rule "
        '(linear when it has none), or with the rule given here; sqrt is '
        "DINOv2's",
    )
    add_cfg_options_arguments(parser)
    parser.add_argument(
        '--checkpoint-every-minutes',
        type=float,
        default=None,
        metavar='N',
        help='also save a safety checkpoint every N minutes (the newest '
        'one is kept; config key checkpoint_every_minutes)',
    )
    parser.add_argument(
        '--max-epochs',
        type=int,
        metavar='N',
        help='train N epochs (train_cfg.max_epochs); schedules given as run '
        "fractions ('10%%') follow",
    )
    parser.add_argument(
        '--max-iters',
        type=int,
        metavar='N',
        help='train N iterations (an IterBasedTrainLoop); schedules given '
        'as run fractions follow',
    )
    parser.add_argument(
        '--vis',
        action='append',
        choices=['tensorboard', 'wandb'],
        help='also log to TensorBoard or Weights & Biases (repeatable; '
        'needs the [optional] extra; WANDB_MODE=offline for offline W&B), '
        'see docs/en/logging.md',
    )
    parser.add_argument(
        '--dry-run',
        action='store_true',
        help='build everything, print model and dataset sizes, iterations '
        'per epoch, scheduler ends, lr and the peak memory of one training '
        'step (measured on batches of 2 and 4, extended to the batch '
        'size; a warning when it exceeds the free memory), then exit '
        'without training',
    )
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a user error (a bad config path, '
        'data_root or checkpoint) instead of one line',
    )
    parser.add_argument(
        '--threads',
        type=int,
        help="torch CPU threads (default: this process's share of the cores, "
        'less one per dataloader worker; OMP_NUM_THREADS is respected)',
    )
    parser.add_argument('--seed', type=int, default=None, help='random seed')
    parser.add_argument(
        '--deterministic',
        action='store_true',
        help='deterministic algorithms (cuDNN, cuBLAS workspace, '
        'torch.use_deterministic_algorithms); slower',
    )
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='how the processes were started (set by the dist_/slurm_ '
        'scripts)',
    )
    # torch.distributed.launch passes --local-rank; torchrun sets LOCAL_RANK
    parser.add_argument(
        '--local_rank',
        '--local-rank',
        type=int,
        default=0,
        help=argparse.SUPPRESS,
    )
    args = parser.parse_args(argv)
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def _fail(message: str, code: int = 2) -> None:
    from mmssl.engine.runner.console import rank_from_env

    if rank_from_env() == 0:  # the same mistake on every rank: say it once
        print(f'error: {message}', file=sys.stderr, flush=True)
    try:
        import torch.distributed as torch_dist

        if torch_dist.is_initialized():
            torch_dist.destroy_process_group()
    except Exception:
        pass
    sys.exit(code)


def main(argv=None):
    """Parse the flags, prepare the config, train (or report: --dry-run)."""
    args = parse_args(argv)
    from mmengine.dist import get_rank

    from mmssl.apis import prepare_train_cfg, train
    from mmssl.engine.preflight import build_train_runner, dry_run
    from mmssl.engine.runner.lifecycle import WorkDirTidy
    from mmssl.engine.runner.workers import set_threads_in_cfg
    from mmssl.errors import UserError

    options = {k: getattr(args, k) for k in PREPARE_ARGS}
    notes = []
    try:
        cfg = prepare_train_cfg(args.config, notes=notes, **options)
        set_threads_in_cfg(cfg, args.threads)
        if get_rank() == 0:
            print(f'mmssl: work dir {osp.abspath(cfg.work_dir)}', flush=True)
            for _, line in notes:
                if line.startswith(('--resume', 'SLURM requeue')):
                    print(f'mmssl: {line}', flush=True)
        if not args.dry_run:
            return train(cfg, notes)
        tidy = WorkDirTidy(cfg.work_dir)  # a dry run leaves nothing behind
        try:
            runner = build_train_runner(cfg, notes)
            lines = dry_run(runner)
        finally:
            tidy.tidy()
    except UserError as exc:
        if args.debug:
            raise
        _fail(str(exc), exc.exit_code)
    print('\n'.join(lines), flush=True)
    return runner


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt as exc:
        # a second Ctrl-C while training (the first one saves and stops),
        # or one before training started
        print(f'mmssl: {exc or "interrupted"}', file=sys.stderr, flush=True)
        sys.exit(130)
