"""Publish a checkpoint: CPU tensors, no training state, hash in the name.

    python tools/model_converters/publish_model.py IN OUT [--backbone-only]
        [--network teacher|online|momentum] [--prefix P] [--trusted]

Writes ``OUT-<first 8 hex of sha256>.pth`` (``.pth`` is stripped from OUT).
With ``--backbone-only`` only the backbone's weights are kept, without
their prefix: the network the method's paper evaluates, the teacher's of
the DINO family (``teacher.backbone.``), else the online network's
(``backbone.``: BYOL, MoCo, all others). ``--network momentum`` keeps the
momentum encoder of BYOL, MoCo or DenseCL instead (``target_net.module.0.``,
``momentum_encoder.module.0.``, ``encoder_k.module.0.``). The output names
the network kept. Load such a file downstream with
``init_cfg=dict(type='Pretrained', checkpoint=FILE)`` on the backbone.

IN is read with mmssl's safe loader: an mmengine training checkpoint loads
as is; a file that pickles other objects is refused unless ``--trusted``
(only for files you trust; docs/en/checkpoints.md).
"""

import argparse
import sys


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('in_file', help='training checkpoint')
    parser.add_argument('out_file', help='output name (hash is appended)')
    parser.add_argument(
        '--backbone-only',
        action='store_true',
        help='keep only the backbone weights (see --network)',
    )
    parser.add_argument(
        '--network',
        choices=('teacher', 'online', 'momentum'),
        help='with --backbone-only: default the teacher (DINO family), '
        'else the online network',
    )
    parser.add_argument(
        '--prefix',
        default=None,
        help='backbone key prefix to keep instead of the '
        'automatic choice, e.g. backbone.',
    )
    from mmssl.checkpoint import add_trusted_argument

    add_trusted_argument(parser, 'IN')
    return parser.parse_args(argv)


def main(argv=None) -> str:
    args = parse_args(argv)
    from mmssl.apis.publish import publish_checkpoint
    from mmssl.checkpoint import exit_on_untrusted, trust_from_args

    with exit_on_untrusted():
        path, info = publish_checkpoint(
            args.in_file,
            args.out_file,
            backbone_only=args.backbone_only,
            prefix=args.prefix,
            trusted=trust_from_args(args),
            network=args.network,
        )
    if args.backbone_only:
        print(
            f'Backbone weights: the {info["network"]} (keys starting with '
            f'"{info["prefix"]}", prefix removed).'
        )
    print(f'Removed training-only entries: {info["removed"] or "none"}')
    print(
        f'Wrote {info["num_tensors"]} tensors to {path} '
        f'(sha256 {info["sha256"]})'
    )
    return path


if __name__ == '__main__':
    main(sys.argv[1:])
