"""Train a self-supervised model from a config (minimal; extended later)."""
import argparse
import os.path as osp

from mmengine.config import Config, DictAction
from mmengine.runner import Runner

from mmssl.utils import register_all_modules


def parse_args():
    parser = argparse.ArgumentParser(description='Train a model')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    parser.add_argument('--launcher', default='none',
                        choices=['none', 'pytorch', 'slurm', 'mpi'])
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    register_all_modules()
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    cfg.launcher = args.launcher
    cfg.work_dir = args.work_dir or osp.join(
        './work_dirs', osp.splitext(osp.basename(args.config))[0])
    runner = Runner.from_cfg(cfg)
    runner.train()


if __name__ == '__main__':
    main()
