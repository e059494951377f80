# Copyright (c) mmssl contributors. All rights reserved.
"""Sweep a linear probe's learning rate; choose on a held-out split.

Each learning rate trains the probe of CONFIG on the training split minus
a held-out part (10 % of each class by default); the best held-out top-1
chooses the learning rate, and only that run is tested on the test split.
The summary is written to WORK_DIR/lr_sweep.json (docs/en/finetune.md).

Example::

    python tools/misc/lr_sweep.py \\
        configs/benchmarks/linear_probe/linear_vit-tiny-p4_1xb64-5e_demo.py \\
        --lrs 0.01 0.1 1 --work-dir work_dirs/sweep \\
        --cfg-options model.backbone.init_cfg.checkpoint=CKPT
"""

import argparse
import json

from mmssl.config import add_cfg_options_arguments, load_config
from mmssl.evaluation.tasks.lr_sweep import DEFAULT_LRS, sweep_linear_probe


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='linear-probe config')
    parser.add_argument(
        '--lrs', type=float, nargs='+', default=list(DEFAULT_LRS)
    )
    parser.add_argument('--holdout', type=float, default=0.1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--work-dir', required=True)
    parser.add_argument('--no-test', action='store_true')
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    summary = sweep_linear_probe(
        cfg,
        args.lrs,
        args.work_dir,
        holdout=args.holdout,
        seed=args.seed,
        test=not args.no_test,
    )
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == '__main__':
    main()
