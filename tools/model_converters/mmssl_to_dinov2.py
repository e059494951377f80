# Copyright (c) mmssl contributors. All rights reserved.
"""Convert an mmssl DINOVisionTransformer checkpoint to the DINOv2 layout.

The output is a plain state dict loadable by the DINOv2 hub model of the
same size (``model.load_state_dict(torch.load(DST))``).

SRC is read with mmssl's safe loader (docs/en/checkpoints.md): tensors and
what mmengine checkpoints hold load; a file that pickles anything else is
refused unless you pass ``--trusted`` (only for files you trust).

Example::

    python tools/model_converters/mmssl_to_dinov2.py \\
        work_dirs/dinov2_vit-s14/epoch_100.pth dinov2_vits14_mine.pth
"""

from typing import List, Optional

from mmssl.checkpoint.cli import Converted, convert_main
from mmssl.checkpoint.layouts import MMSSL_MARKER, mmssl_to_dinov2


def _convert(args, state: dict) -> Converted:
    out = mmssl_to_dinov2(state, num_chunks=args.chunks)
    return Converted(
        out,
        f'Converted {len(state)} mmssl keys -> {len(out)} DINOv2 keys. '
        f'Saved {args.dst}',
    )


def main(argv: Optional[List[str]] = None) -> dict:
    chunks = dict(
        type=int,
        default=0,
        help='write the block-chunked layout with this many chunks',
    )
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output DINOv2-layout state dict (.pth)',
        src_prefix_help="backbone prefix in SRC, e.g. 'teacher.backbone.' or "
        "'backbone.' (default: auto-detect, teacher preferred)",
        marker=MMSSL_MARKER,
        convert=_convert,
        options=[('--chunks', chunks)],
    )


if __name__ == '__main__':
    main()
