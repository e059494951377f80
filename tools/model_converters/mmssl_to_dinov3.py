# Copyright (c) mmssl contributors. All rights reserved.
"""Convert an mmssl DINOv3ViT checkpoint to the DINOv3 hub layout.

The output is a plain state dict loadable by the facebookresearch/dinov3
hub model of the same size (``model.load_state_dict(torch.load(DST))``).

SRC is read with mmssl's safe loader (docs/en/checkpoints.md): tensors and
what mmengine checkpoints hold load; a file that pickles anything else is
refused unless you pass ``--trusted`` (only for files you trust).

Example::

    python tools/model_converters/mmssl_to_dinov3.py \\
        work_dirs/dinov3_vit-s16/iter_100000.pth dinov3_vits16_mine.pth
"""

from typing import List, Optional

from mmssl.checkpoint.cli import Converted, convert_main
from mmssl.checkpoint.layouts import MMSSL_MARKER, mmssl_to_dinov3


def _convert(args, state: dict) -> Converted:
    if 'rope_embed.periods' not in state:
        raise SystemExit(
            f'error: {args.src} holds no rope_embed.periods under the '
            'chosen prefix: not a DINOv3ViT backbone (for a DINOv2 ViT use '
            'mmssl_to_dinov2.py).'
        )
    out = mmssl_to_dinov3(state)
    return Converted(
        out,
        f'Converted {len(state)} mmssl keys -> {len(out)} DINOv3 keys. '
        f'Saved {args.dst}',
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output DINOv3 hub state dict (.pth)',
        src_prefix_help="backbone prefix in SRC, e.g. 'teacher.backbone.' or "
        "'backbone.' (default: auto-detect, teacher preferred)",
        marker=MMSSL_MARKER,
        convert=_convert,
    )


if __name__ == '__main__':
    main()
