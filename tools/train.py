"""Train a self-supervised model from a config.

One process (CPU or one GPU)::

    python tools/train.py CONFIG [--work-dir DIR] [--resume [CKPT]] [--amp]
        [--auto-scale-lr [linear|sqrt]] [--seed N] [--deterministic]
        [--cfg-options KEY=VALUE ...] [--allow-new-keys]

Several processes: ``bash tools/dist_train.sh CONFIG N [ARGS]`` (torchrun,
``--launcher pytorch``) or ``tools/slurm_train.sh`` (``--launcher slurm``).
See docs/en/distributed.md.
"""

import argparse
import os
import os.path as osp
import sys

# Work from a checkout without installing mmssl.
ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from mmssl.utils.config import CfgOptionsAction  # noqa: E402


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
        help='resume from CHECKPOINT; without a value, from the newest '
        'checkpoint in the work dir (training starts from scratch, with '
        'a message, when there is none)',
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
        const='linear',
        default=None,
        choices=['linear', 'sqrt'],
        help='scale the lr by (world size x batch_size) / '
        'auto_scale_lr.base_batch_size, linearly (default) or by its '
        'square root (DINOv2)',
    )
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='override config entries, KEY=VALUE (dotted keys, list '
        'indices, Python literals); unknown keys are an error',
    )
    parser.add_argument(
        '--allow-new-keys',
        action='store_true',
        help='let --cfg-options add keys the config does not have',
    )
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
    print(f'error: {message}', file=sys.stderr, flush=True)
    try:
        import torch.distributed as torch_dist

        if torch_dist.is_initialized():
            torch_dist.destroy_process_group()
    except Exception:
        pass
    sys.exit(code)


def _requeued_resume(cfg) -> tuple:
    """``(resume, checkpoint, message)`` for a SLURM job after a requeue.

    The newest checkpoint of the work dir is resumed without ``--resume``
    when the config stored in it equals this run's config; otherwise the
    run stops, naming the keys that differ.
    """
    from mmssl.checkpoint import load_checkpoint
    from mmssl.launch import find_newest_checkpoint
    from mmssl.utils.config_diff import config_differences

    ckpt = find_newest_checkpoint(cfg.work_dir)
    if ckpt is None:
        return (
            False,
            None,
            'SLURM requeue: no checkpoint in the work dir yet; training '
            'starts from scratch.',
        )
    trusted = True if cfg.get('trust_checkpoint', False) else None
    saved = (load_checkpoint(ckpt, trusted=trusted).get('meta') or {}).get(
        'cfg'
    )
    if saved:
        diffs = config_differences(saved, cfg)
    else:
        diffs = ['the checkpoint stores no config']
    if diffs:
        _fail(
            f'SLURM requeue: {ckpt} was written by a different config '
            f'({"; ".join(diffs)}), so it is not resumed. Use the '
            'config it was trained with, pass --resume CHECKPOINT to '
            'continue from it anyway, or give this run a new --work-dir.'
        )
    return True, ckpt, f'SLURM requeue: resuming from {ckpt}'


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.deterministic:
        # cuBLAS reads this when its handle is created, i.e. before any
        # CUDA work; nothing has touched CUDA yet.
        os.environ.setdefault('CUBLAS_WORKSPACE_CONFIG', ':4096:8')

    import torch

    from mmssl.engine.runner import (
        TooFewSamplesError,
        build_runner,
        check_train_dataloader,
        setup_distributed_cfg,
    )
    from mmssl.engine.runner.run_length import set_run_length
    from mmssl.launch import RunLock, WorkDirBusyError, resolve_resume
    from mmssl.launch.requeue import is_requeued_run
    from mmssl.utils import register_all_modules
    from mmssl.utils.config import (
        UnknownConfigKeyError,
        auto_scale_lr_in_cfg,
        enable_amp_in_cfg,
        merge_cfg_options,
    )
    from mmssl.utils.config_compat import load_config_file

    register_all_modules()
    if not osp.isfile(args.config):
        _fail(f'config file {args.config} does not exist.')
    cfg = load_config_file(args.config)
    try:
        notes = merge_cfg_options(cfg, args.cfg_options, args.allow_new_keys)
        run_length = set_run_length(cfg, args.max_epochs, args.max_iters)
    except (UnknownConfigKeyError, IndexError, TypeError, ValueError) as exc:
        _fail(str(exc))

    if cfg.get('custom_imports'):  # e.g. added with --cfg-options
        from mmengine.utils import import_modules_from_strings

        import_modules_from_strings(**cfg.custom_imports)

    # work dir: --work-dir > the config's work_dir > ./work_dirs/<stem>
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir') is None:
        cfg.work_dir = osp.join(
            './work_dirs', osp.splitext(osp.basename(args.config))[0]
        )

    # Refuse at once when a live run uses the work dir; the runner takes
    # the lock itself when training starts.
    lock_cfg = dict(cfg.get('lock_cfg') or {})
    if lock_cfg.pop('enable', True) is not False:
        try:
            RunLock(cfg.work_dir, **lock_cfg).check()
        except WorkDirBusyError as exc:
            _fail(str(exc), code=1)

    try:
        rank, world_size = setup_distributed_cfg(cfg, args.launcher)
    except RuntimeError as exc:
        _fail(str(exc))
    cuda = torch.cuda.is_available()
    log_lines = [run_length] if run_length else []
    if rank == 0:
        print(f'mmssl: work dir {osp.abspath(cfg.work_dir)}', flush=True)
    if world_size > 1:
        log_lines.append(
            f'distributed: {world_size} processes, backend '
            f'{cfg.env_cfg["dist_cfg"]["backend"]}, launcher {args.launcher}'
        )

    if args.amp:
        try:
            log_lines.append(enable_amp_in_cfg(cfg, cuda))
        except ValueError as exc:
            _fail(str(exc))

    auto = cfg.get('auto_scale_lr') or {}
    if args.auto_scale_lr is not None or auto.get('enable', False):
        rule = args.auto_scale_lr or auto.get('rule', 'linear')
        try:
            log_lines.extend(auto_scale_lr_in_cfg(cfg, world_size, rule))
        except ValueError as exc:
            _fail(str(exc))

    randomness = dict(cfg.get('randomness') or {})
    if args.seed is not None:
        randomness['seed'] = args.seed
    if args.deterministic:
        randomness['deterministic'] = True
        if randomness.get('seed') is None:
            randomness['seed'] = 0
            log_lines.append('--deterministic without a seed: using seed 0')
        cfg.setdefault('env_cfg', {})['cudnn_benchmark'] = False
    cfg.randomness = randomness
    if args.checkpoint_every_minutes is not None:
        cfg.checkpoint_every_minutes = args.checkpoint_every_minutes

    try:
        resume, ckpt, message = resolve_resume(args.resume, cfg.work_dir)
    except FileNotFoundError as exc:
        _fail(str(exc))
    if args.resume is None and is_requeued_run():
        resume, ckpt, message = _requeued_resume(cfg)
        args.resume = 'auto'
    if args.resume is not None:
        cfg.resume = resume
        if resume:
            cfg.load_from = ckpt
        log_lines.append(message)

    try:
        runner = build_runner(cfg)
    except UnknownConfigKeyError as exc:
        _fail(str(exc))
    if args.deterministic:
        # mmengine enabled strict mode; many vision ops (e.g. the CUDA
        # backward of adaptive average pooling) have no deterministic
        # kernel and would stop training, so they warn instead.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        log_lines.append(
            '--deterministic: cuDNN deterministic, benchmark off, '
            f'CUBLAS_WORKSPACE_CONFIG={os.environ["CUBLAS_WORKSPACE_CONFIG"]}'
            ', deterministic algorithms (warn where none exists)'
        )
    for line in notes:
        runner.logger.warning(line)
    for line in log_lines:
        runner.logger.info(line)
        if rank == 0 and line.startswith(('--resume', 'SLURM requeue')):
            print(f'mmssl: {line}', flush=True)

    # Build the loop (and dataloader) now to refuse an empty epoch before
    # schedulers, checkpoints or collectives are set up.
    runner._train_loop = runner.build_train_loop(runner._train_loop)
    try:
        iters = check_train_dataloader(
            runner.train_dataloader, runner.world_size
        )
    except TooFewSamplesError as exc:
        runner.logger.error(str(exc))
        _fail(str(exc), code=1)
    runner.logger.info(
        f'{iters} iterations per epoch on each of '
        f'{runner.world_size} process(es)'
    )
    try:
        runner.train()
    except WorkDirBusyError as exc:
        runner.logger.error(str(exc))
        _fail(str(exc), code=1)


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt as exc:
        # a second Ctrl-C while training (the first one saves and stops),
        # or one before training started
        print(f'mmssl: {exc or "interrupted"}', file=sys.stderr, flush=True)
        sys.exit(130)
