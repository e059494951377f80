"""kNN accuracy of a config's model at random initialisation (no training).

The baseline each demo README compares its trained kNN top-1 with: the model
is built from the config (seeded by ``randomness.seed``), no checkpoint is
loaded, and the config's test loop (e.g. ``FeatureTestLoop`` + kNN) runs.

    python tools/analysis_tools/knn_random_init.py CONFIG \
        [--work-dir DIR] [--cfg-options k=v ...]
"""

import argparse
import os.path as osp

from mmengine.config import Config, DictAction
from mmengine.runner import Runner

from mmssl.utils import register_all_modules


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description='kNN evaluation of a randomly initialised model'
    )
    parser.add_argument('config', help='config file with a test loop')
    parser.add_argument('--work-dir', help='folder for logs')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    register_all_modules()
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    if cfg.get('test_dataloader') is None:
        raise ValueError(
            f'{args.config} has no test_dataloader; add a kNN '
            'evaluation (configs/_base_/datasets/demo_knn.py)'
        )
    cfg.load_from = None
    cfg.launcher = 'none'
    cfg.work_dir = args.work_dir or osp.join(
        './work_dirs',
        'random_init',
        osp.splitext(osp.basename(args.config))[0],
    )
    runner = Runner.from_cfg(cfg)
    metrics = runner.test()
    print('random-init metrics:', metrics)


if __name__ == '__main__':
    main()
