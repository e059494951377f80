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

import os.path as osp
from typing import List, Optional

from mmssl.checkpoint import add_prefix
from mmssl.checkpoint.cli import (
    NO_STRICT_OPTION,
    PREFIX_OPTION,
    Converted,
    convert_main,
    vit_meta,
)
from mmssl.checkpoint.layouts import DINOV2_MARKER, dinov2_to_mmssl


def _convert(args, state: dict) -> Converted:
    converted = dinov2_to_mmssl(state, strict=not args.no_strict)
    prefixes = args.prefix if args.prefix is not None else ['backbone.']
    out = add_prefix(converted, prefixes)
    meta = vit_meta(converted)
    return Converted(
        dict(
            state_dict=out,
            meta=dict(
                converted_from='dinov2', source=osp.basename(args.src), **meta
            ),
        ),
        f'Converted {len(state)} DINOv2 keys -> {len(converted)} mmssl '
        f'keys x {len(prefixes)} prefix(es) {prefixes}; '
        f'{meta["num_layers"]} blocks, embed {meta["embed_dims"]}, '
        f'{meta["num_register_tokens"]} registers. Saved {args.dst}',
        returned=out,
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        src_help='DINOv2 checkpoint (.pth)',
        dst_help='output mmssl checkpoint (.pth)',
        src_prefix_help='prefix of the backbone keys in SRC (default: '
        'auto-detect, '
        'teacher preferred)',
        marker=DINOV2_MARKER,
        convert=_convert,
        options=[PREFIX_OPTION, NO_STRICT_OPTION],
        src_prefix_at=1,
    )


if __name__ == '__main__':
    main()
