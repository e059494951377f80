"""kNN top-1/top-5 of a config's model, trained or at random init.

Uses the config's ``test_dataloader`` / ``test_evaluator`` (e.g.
``configs/_base_/datasets/demo_knn.py``: bank = data/demo/train, queries =
data/demo/val). Without ``--checkpoint`` the model is evaluated right after
``init_weights()`` with the config's seed: the "same network at random
init" baseline quoted in the READMEs.

    python tools/misc/knn_eval.py \
        configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py
    python tools/misc/knn_eval.py CONFIG --checkpoint work_dirs/x/epoch_6.pth

The checkpoint is read with mmssl's safe loader; one that pickles more than
tensors and mmengine's own types is refused unless ``--trusted``.
"""

import argparse
import os.path as osp
import sys
import tempfile

sys.path.insert(0, osp.abspath(osp.join(osp.dirname(__file__), '..', '..')))

from mmengine.config import Config, DictAction  # noqa: E402
from mmengine.runner import Runner  # noqa: E402

from mmssl.checkpoint import (  # noqa: E402
    add_trusted_argument,
    exit_on_untrusted,
    loading_policy,
    trust_from_args,
)
from mmssl.utils import register_all_modules  # noqa: E402


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config')
    parser.add_argument(
        '--checkpoint',
        default=None,
        help='checkpoint to load; random init if omitted',
    )
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    add_trusted_argument(parser)
    args = parser.parse_args(argv)
    register_all_modules()
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    cfg.work_dir = tempfile.mkdtemp(prefix='knn_eval_')
    cfg.load_from = args.checkpoint
    trusted = trust_from_args(args)
    if trusted:
        cfg.trust_checkpoint = True
    runner = Runner.from_cfg(cfg)
    # Every load (CHECKPOINT, or init_cfg weights) under the policy.
    with (
        exit_on_untrusted(),
        loading_policy(trusted, args.checkpoint or 'init_cfg'),
    ):
        if args.checkpoint is None:
            runner.model.init_weights()
        metrics = runner.test()
    print({k: round(float(v), 2) for k, v in metrics.items()})
    return metrics


if __name__ == '__main__':
    main()
