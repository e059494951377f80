# Copyright (c) mmssl contributors. All rights reserved.
"""Export an mmssl DINOVisionTransformer checkpoint to timm's ViT layout.

The output loads into the timm model of the same size, e.g.
``timm.create_model('vit_small_patch14_dinov2', num_classes=0,
img_size=518)`` (or ``vit_small_patch14_reg4_dinov2`` with 4 registers).
timm's class token absorbs its position embedding for register models.

SRC is read with mmssl's safe loader (docs/en/checkpoints.md): tensors and
what mmengine checkpoints hold load; a file that pickles anything else is
refused unless you pass ``--trusted`` (only for files you trust).

Example::

    python tools/model_converters/mmssl_to_timm.py \\
        work_dirs/dinov2_vit-s14/epoch_100.pth vit_small_patch14_mine.pth
"""

from typing import List, Optional

from mmssl.checkpoint.cli import Converted, convert_main
from mmssl.checkpoint.layouts import MMSSL_MARKER, mmssl_to_timm


def _convert(args, state: dict) -> Converted:
    out = mmssl_to_timm(state)
    return Converted(
        out,
        f'Converted {len(state)} mmssl keys -> {len(out)} timm keys. '
        f'Saved {args.dst}',
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output timm state dict (.pth)',
        src_prefix_help='backbone prefix in SRC (default: auto-detect, '
        'teacher preferred)',
        marker=MMSSL_MARKER,
        convert=_convert,
    )


if __name__ == '__main__':
    main()
