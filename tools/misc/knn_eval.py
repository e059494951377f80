"""kNN top-1/top-5 of any checkpoint on any labelled folders (or a config's).

Data: the config's ``test_dataloader`` / ``test_evaluator`` (e.g.
``configs/_base_/datasets/demo_knn.py``: bank = data/demo/train, queries =
data/demo/val), or two labelled folders ``<root>/<class>/<image>`` given
with ``--train-folder`` (the feature bank) and ``--val-folder`` (the
queries). Folder images are read with the training decoder (8/16-bit,
grey, any size; bad files are skipped and named), resized on the short
side and centre-cropped to ``--img-size``.

Weights: without ``--checkpoint`` the model is evaluated right after
``init_weights()`` with the config's seed (the "same network at random
init" baseline quoted in the READMEs), and the output says so.
``--checkpoint`` takes any file the warm-start loader reads (an mmssl
checkpoint, a ``publish_model.py --backbone-only`` file, the DINOv2/DINOv3
hub layouts, timm, HF): its backbone weights are found (teacher first, or
``--prefix``) and loaded into every backbone copy of the model
(``mmssl.evaluation.load_backbone``), with a report of matched and missing
keys. A file that does not hold the config's backbone (below 95 % of its
tensors) stops the tool with exit status 2 and one line naming what
matched and which config to pass: no figure of a random network.

    python tools/misc/knn_eval.py \
        configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py
    python tools/misc/knn_eval.py CONFIG --checkpoint work_dirs/x/epoch_6.pth
    python tools/misc/knn_eval.py \
        configs/benchmarks/knn/knn_vit-small-p14_custom.py \
        --checkpoint CKPT --train-folder /data/train --val-folder /data/val

``--bn-recalibrate`` re-estimates every BatchNorm's running mean and
variance on the kNN bank (the training split), with the weights left as
they are, before the kNN (see ``mmssl.evaluation.bn_recalibration``).
At random init this is the fair baseline for BatchNorm networks: a run
at learning rate 0 already adapts the running statistics to the data,
and that alone moves kNN by many points. The bank is read with the
kNN (test) pipeline, the one the features are then extracted with, so
the statistics fit exactly the images that are compared (the training
pipeline's crops and colour jitter would shift them), in one pass,
shuffled with a fixed seed (batches sorted by class folder would give
class-specific batch statistics to the layers below).

    python tools/misc/knn_eval.py CONFIG --bn-recalibrate

``--linear`` adds a linear probe on the same frozen features: a
multinomial logistic regression fitted on the bank and scored on the
queries (``mmssl.evaluation.LinearProbeAccuracy``; deterministic L-BFGS on
standardised features, L2 weight ``--linear-wd``). It needs no probe
config, so it fits any backbone (HiViT, Swin, MixMIM, sparse ResNet...);
masked-image models are judged by a linear probe rather than kNN (He et
al. 2022, Sec. 4). Both kNN and linear top-1/top-5 are printed.

    python tools/misc/knn_eval.py CONFIG --checkpoint CKPT --linear

``--pool patch-mean`` probes the mean of the patch tokens instead of the
first (CLS) token of a ViT (BEiT v1 trains no loss on its CLS token).

The checkpoint is read with mmssl's safe loader; one that pickles more than
tensors and mmengine's own types is refused unless ``--trusted``.
"""

import argparse

from mmssl.checkpoint import add_trusted_argument
from mmssl.config.cli import add_cfg_options_arguments
from mmssl.errors import one_line_exit
from mmssl.evaluation.tasks.knn_eval import (  # noqa: F401 (the tool's API)
    bn_recalibrate,
    load_weights,
    pool_patch_mean,
    prepare_cfg,
    run_knn,
    set_metrics,
    use_folders,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config')
    parser.add_argument(
        '--checkpoint',
        default=None,
        help='any checkpoint holding the model or its backbone; random '
        'init if omitted',
    )
    parser.add_argument(
        '--prefix',
        default=None,
        help="backbone prefix in the checkpoint ('' for a bare backbone); "
        'default: the whole model when the keys fit, else found (teacher '
        'first)',
    )
    parser.add_argument(
        '--network',
        choices=('teacher', 'online', 'momentum'),
        help='default: the teacher (DINO family), else the online network '
        '(BYOL, MoCo); momentum: their momentum encoder',
    )
    parser.add_argument('--train-folder', help='labelled bank folder')
    parser.add_argument('--val-folder', help='labelled query folder')
    parser.add_argument(
        '--img-size',
        type=int,
        default=None,
        help="crop side for folders (default: the backbone's img_size, "
        'else the training crop, else 224)',
    )
    parser.add_argument('--batch-size', type=int, default=None)
    parser.add_argument('--num-workers', type=int, default=None)
    parser.add_argument('--k', type=int, default=None, help='neighbours')
    parser.add_argument('--work-dir', default=None, help='for the log')
    parser.add_argument(
        '--bn-recalibrate',
        action='store_true',
        help='re-estimate BatchNorm running stats on the kNN bank (one '
        'pass, test pipeline, no weight change) before the kNN',
    )
    parser.add_argument(
        '--linear',
        action='store_true',
        help='also fit a linear probe (logistic regression) on the bank '
        'features and report its accuracy on the queries',
    )
    parser.add_argument(
        '--linear-wd',
        type=float,
        default=5e-3,
        help='L2 weight of the linear probe (default 5e-3)',
    )
    parser.add_argument(
        '--pool',
        choices=('auto', 'patch-mean'),
        default='auto',
        help="ViT tokens: 'auto' takes the first (CLS) token, 'patch-mean' "
        'the mean of the others',
    )
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.linear_wd < 0:
        parser.error(f'--linear-wd must be >= 0, got {args.linear_wd}')
    if bool(args.train_folder) != bool(args.val_folder):
        parser.error('give both --train-folder and --val-folder')
    return args


def main(argv=None) -> dict:
    from mmssl.setup_env import register_all_modules

    args = parse_args(argv)
    register_all_modules()
    metrics = run_knn(args)
    print({k: round(float(v), 2) for k, v in metrics.items()})
    return metrics


def cli(argv=None) -> dict:
    """:func:`main`; a user error (a ``SystemExit`` carrying its
    ``error: ...`` line) is printed as that one line, exit status 2."""
    try:
        return main(argv)
    except SystemExit as exc:
        if not isinstance(exc.code, str):
            raise
        one_line_exit(exc.code)


if __name__ == '__main__':
    cli()
