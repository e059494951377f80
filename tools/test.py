"""Evaluate a checkpoint with the config's test loop and print the metrics.

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.json]
        [--cfg-options KEY=VALUE ...] [--launcher ...] [--trusted]

CHECKPOINT is read with mmssl's safe loader: tensors and what mmengine
checkpoints hold load; a file that pickles anything else is refused unless
``--trusted`` (only for files you trust; docs/en/checkpoints.md).

For the demo configs the test loop is a kNN evaluation (FeatureTestLoop)
on ``knn_data_root`` (bank: train split, queries: val split).
Several processes: ``bash tools/dist_test.sh CONFIG CHECKPOINT N``.
"""

import argparse
import json
import os
import os.path as osp
import sys

from mmssl.checkpoint import (
    add_trusted_argument,
    exit_on_untrusted,
    loading_policy,
    trust_from_args,
)
from mmssl.config import add_cfg_options_arguments


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='Test (evaluate) a checkpoint (mmssl).'
    )
    parser.add_argument('config', help='config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument(
        '--work-dir',
        help='folder for the test log; default: ./work_dirs/<config name>',
    )
    parser.add_argument('--out', help='write the metrics to this JSON file')
    add_cfg_options_arguments(parser)
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
    )
    add_trusted_argument(parser)
    parser.add_argument(
        '--threads',
        type=int,
        help="torch CPU threads (default: this process's share of the cores, "
        'less one per dataloader worker; OMP_NUM_THREADS is respected)',
    )
    parser.add_argument(
        '--debug',
        action='store_true',
        help='show the traceback of a user error instead of one line',
    )
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


def load_for_test(runner, cfg, args) -> str:
    """Load CHECKPOINT (teacher backbone first); exit below 95 %.

    A test loop with a head (a linear classifier) needs the whole model:
    a file holding only the backbone would be tested with a random head.
    """
    from mmssl.evaluation.load_backbone import (
        BackboneMismatchError,
        load_backbone_weights,
    )

    try:
        loaded = load_backbone_weights(
            runner.model,
            args.checkpoint,
            trusted=trust_from_args(args),
            config=args.config,
        )
    except BackboneMismatchError as err:
        print(f'error: {err}', file=sys.stderr)
        sys.exit(2)
    feature_loop = 'Feature' in str((cfg.get('test_cfg') or {}).get('type'))
    if not loaded.whole and not feature_loop and loaded.copies[0]:
        print(
            f'error: {args.checkpoint} holds the backbone of {args.config} '
            'but not the whole model (its head would be tested at random '
            'init); pass the checkpoint of the trained classifier, or use '
            'tools/eval.py for a probe.',
            file=sys.stderr,
        )
        sys.exit(2)
    return loaded.summary()


TEST_KEYS = ('test_dataloader', 'test_cfg', 'test_evaluator')


def no_test_loop(cfg) -> str:
    """What the config lacks to run a test loop, with the fix; '' when
    it has ``test_dataloader``, ``test_cfg`` and ``test_evaluator``."""
    missing = [key for key in TEST_KEYS if cfg.get(key) is None]
    if not missing:
        return ''
    return (
        f'has no {" / ".join(missing)}, so there is no test to run; set '
        f'{", ".join(TEST_KEYS)} in the config (the demo configs have a '
        'kNN test on data/demo), or measure the checkpoint with '
        'python tools/eval.py CONFIG --checkpoint CKPT --task knn --data '
        'ROOT (labelled ROOT/train and ROOT/val) or --task rank (no labels).'
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    from mmssl.config import load_config
    from mmssl.engine.runner import build_runner, setup_distributed_cfg
    from mmssl.engine.runner.lifecycle import WorkDirTidy
    from mmssl.engine.runner.workers import set_threads_in_cfg
    from mmssl.errors import (
        BUILD_ERRORS,
        UserError,
        checkpoint_file_error,
        config_build_error,
    )
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    notes = []
    cfg = load_config(
        args.config,
        args.cfg_options,
        args.allow_new_keys,
        notes=notes,
        exit_on_error=True,
    )
    if not osp.isfile(args.checkpoint):
        print(
            f'error: checkpoint file {args.checkpoint} does not exist.',
            file=sys.stderr,
        )
        sys.exit(2)
    unreadable = checkpoint_file_error(args.checkpoint, 'CHECKPOINT')
    if unreadable:  # before the runner is built
        print(f'error: {unreadable}', file=sys.stderr)
        sys.exit(2)
    set_threads_in_cfg(cfg, args.threads)
    missing = no_test_loop(cfg)
    if missing:
        print(f'error: {args.config} {missing}', file=sys.stderr)
        sys.exit(2)
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir') is None:
        cfg.work_dir = osp.join(
            './work_dirs', osp.splitext(osp.basename(args.config))[0]
        )
    try:
        rank, _ = setup_distributed_cfg(cfg, args.launcher)
    except RuntimeError as exc:
        print(f'error: {exc}', file=sys.stderr)
        sys.exit(2)
    # CHECKPOINT is loaded here (mmssl.evaluation.load_backbone), not by
    # the runner, which would test a mostly random model without a word
    cfg.load_from = None
    cfg.resume = False
    # CHECKPOINT is the weights; a benchmark config's Pretrained init_cfg
    # (applied by PretrainedInitHook without a match check) is not needed
    backbone = cfg.model.get('backbone') or {}
    init = backbone.get('init_cfg') or {}
    if isinstance(init, dict) and init.get('type') == 'Pretrained':
        backbone['init_cfg'] = None
    cfg.custom_hooks = [
        h
        for h in cfg.get('custom_hooks') or []
        if h.get('type') != 'PretrainedInitHook'
    ]
    trusted = trust_from_args(args)
    if trusted:
        cfg.trust_checkpoint = True

    tidy = WorkDirTidy(cfg.work_dir)
    try:
        runner = build_runner(cfg)
    except BUILD_ERRORS as exc:  # a value the build refused: one line
        tidy.tidy()
        raise config_build_error(exc, cfg) from exc
    for line in notes:
        runner.logger.warning(line)
    with exit_on_untrusted(), loading_policy(trusted, args.checkpoint):
        try:
            print(f'mmssl: loaded {load_for_test(runner, cfg, args)}')
        except SystemExit:  # not the config's backbone: no log folders
            tidy.tidy()
            raise
        try:  # a missing test folder is one line, not a trace
            runner._test_loop = runner.build_test_loop(runner._test_loop)
        except FileNotFoundError as exc:
            tidy.tidy()  # no log folders of a test that never ran
            raise UserError(
                f'the test data of {args.config} is missing: '
                f'{exc.filename or exc}. Make it (the demo configs: python '
                'tools/misc/make_demo_dataset.py data/demo) or point the '
                "config's test_dataloader at yours with --cfg-options."
            ) from exc
        metrics = runner.test()
    if rank == 0:
        print(f'mmssl: metrics of {args.checkpoint}:')
        for key, value in metrics.items():
            print(f'  {key}: {value}')
        if args.out:
            os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
            with open(args.out, 'w') as f:
                json.dump(
                    {
                        k: float(v) if isinstance(v, (int, float)) else v
                        for k, v in metrics.items()
                    },
                    f,
                    indent=2,
                )
            print(f'mmssl: metrics written to {args.out}')
    return metrics


def run(argv=None) -> None:
    """:func:`main`; a user error (mmssl.errors.UserError) is one
    line, ``error: ...``, and exit status 2, unless ``--debug``."""
    from mmssl.errors import UserError

    try:
        main(argv)
    except UserError as exc:
        if '--debug' in (sys.argv[1:] if argv is None else argv):
            raise
        print(f'error: {exc}', file=sys.stderr, flush=True)
        sys.exit(exc.exit_code)


if __name__ == '__main__':
    run()
