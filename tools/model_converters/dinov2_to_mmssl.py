# Copyright (c) mmssl contributors. All rights reserved.
"""Convert a DINOv2 backbone checkpoint to mmssl's DINOVisionTransformer.

Accepts the torch.hub state dicts of facebookresearch/dinov2 (e.g.
``dinov2_vits14_pretrain.pth``, ``dinov2_vits14_reg4_pretrain.pth``), their
block-chunked variant (``blocks.<chunk>.N.*``) and DINOv2 training
checkpoints (``teacher_checkpoint.pth``: the teacher backbone is taken).

SRC is read with mmssl's safe loader (docs/en/checkpoints.md): tensors and
what mmengine checkpoints hold load; a file that pickles anything else is
refused unless you pass ``--trusted`` (only for files you trust).

Example::

    python tools/model_converters/dinov2_to_mmssl.py \\
        dinov2_vitb14_pretrain.pth checkpoints/dinov2_vitb14_mmssl.pth
    # initialise both student and teacher of a DINOv2 config:
    python tools/model_converters/dinov2_to_mmssl.py SRC DST \\
        --prefix backbone. --prefix teacher.backbone.
"""

import argparse
import os.path as osp
import sys
from typing import List, Optional

sys.path.insert(0, osp.abspath(osp.join(osp.dirname(__file__), '..', '..')))

from mmssl.checkpoint import (  # noqa: E402
    add_prefix,
    add_trusted_argument,
    exit_on_untrusted,
    load_checkpoint,
    save_checkpoint_atomic,
    select_backbone,
    trust_from_args,
    unwrap_state_dict,
)
from mmssl.checkpoint.layouts import DINOV2_MARKER, dinov2_to_mmssl  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='DINOv2 checkpoint (.pth)')
    parser.add_argument('dst', help='output mmssl checkpoint (.pth)')
    parser.add_argument(
        '--prefix',
        action='append',
        default=None,
        help='prefix of the backbone keys in the output; repeat it to write '
        "several copies (default: 'backbone.'; use '' for a bare backbone)",
    )
    parser.add_argument(
        '--src-prefix',
        default=None,
        help='prefix of the backbone keys in SRC (default: auto-detect, '
        'teacher preferred)',
    )
    parser.add_argument(
        '--no-strict',
        action='store_true',
        help='drop unrecognised keys instead of failing',
    )
    add_trusted_argument(parser, 'SRC')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    with exit_on_untrusted():
        ckpt = load_checkpoint(args.src, trusted=trust_from_args(args))
    state = select_backbone(
        unwrap_state_dict(ckpt), args.src_prefix, marker=DINOV2_MARKER
    )
    converted = dinov2_to_mmssl(state, strict=not args.no_strict)
    prefixes = args.prefix if args.prefix is not None else ['backbone.']
    out = add_prefix(converted, prefixes)
    depth = len({k.split('.')[1] for k in converted if k.startswith('layers')})
    regs = converted.get('register_tokens')
    save_checkpoint_atomic(
        dict(
            state_dict=out,
            meta=dict(
                converted_from='dinov2',
                source=osp.basename(args.src),
                embed_dims=int(converted['cls_token'].shape[-1]),
                num_layers=depth,
                num_register_tokens=0 if regs is None else regs.shape[1],
                patch_size=int(
                    converted['patch_embed.projection.weight'].shape[-1]
                ),
            ),
        ),
        args.dst,
    )
    print(
        f'Converted {len(state)} DINOv2 keys -> {len(converted)} mmssl '
        f'keys x {len(prefixes)} prefix(es) {prefixes}; {depth} blocks, '
        f'embed {converted["cls_token"].shape[-1]}, '
        f'{0 if regs is None else regs.shape[1]} registers. '
        f'Saved {args.dst}'
    )
    return out


if __name__ == '__main__':
    main()
