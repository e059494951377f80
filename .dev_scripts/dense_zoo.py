"""Measure the dense-probe column of the model zoo.

    python .dev_scripts/dense_zoo.py CONFIG [CONFIG ...] \\
        --data data/dense [--work-dir DIR] [--results FILE]

For each dense demo config (``configs/*/*_dense_demo.py``), one after the
other: the frozen segmentation probe at random init (``tools/eval.py
CONFIG --task seg --data DATA --crop 64``), the pretraining
(``tools/train.py``), and the probe of the last epoch's checkpoint. Each
step's output goes to WORK_DIR/NAME/*.log; one markdown row per config is
printed (mIoU trained vs random, seconds, commands) and all rows, with
per-class IoU, are written to the JSON file ``--results`` (default
WORK_DIR/dense_zoo.json) after every config.
"""

import argparse
import json
import os
import os.path as osp
import shlex

from mmssl_dev.dense_zoo import TABLE_HEAD, markdown_row, measure


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n'.join(__doc__.splitlines()[1:]),
    )
    parser.add_argument('configs', nargs='+')
    parser.add_argument('--data', default='data/dense')
    parser.add_argument('--work-dir', default='work_dirs/dense_zoo')
    parser.add_argument('--results', help='default WORK_DIR/dense_zoo.json')
    parser.add_argument(
        '--train-options',
        nargs='+',
        default=[],
        help='--cfg-options for tools/train.py (e.g. train_cfg.max_epochs=1)',
    )
    parser.add_argument(
        '--probe-options',
        default='',
        help='extra tools/eval.py flags in one string, e.g. '
        '"--probe-iters 50"',
    )
    return parser.parse_args(argv)


def main(argv=None) -> list:
    args = parse_args(argv)
    results = args.results or osp.join(args.work_dir, 'dense_zoo.json')
    rows, failed = [], []
    for config in args.configs:
        name = osp.splitext(osp.basename(config))[0]
        try:
            row = measure(
                config,
                args.data,
                osp.join(args.work_dir, name),
                args.train_options,
                shlex.split(args.probe_options),
            )
        except (RuntimeError, FileNotFoundError) as err:
            print(f'[{config}] FAILED: {err}', flush=True)
            failed.append(config)
            continue
        rows.append(row)
        os.makedirs(osp.dirname(osp.abspath(results)), exist_ok=True)
        with open(results, 'w') as f:
            json.dump(rows, f, indent=2)
        print(markdown_row(row), flush=True)
    print(f'wrote {results}')
    print(TABLE_HEAD)
    for row in rows:
        print(markdown_row(row))
    if failed:
        raise SystemExit(f'failed: {" ".join(failed)}')
    return rows


if __name__ == '__main__':
    main()
