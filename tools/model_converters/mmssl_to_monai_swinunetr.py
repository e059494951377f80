# Copyright (c) mmssl contributors. All rights reserved.
"""Export an mmssl SwinViT3D checkpoint to MONAI's SwinUNETR encoder.

The output is a plain state dict that loads with ``strict=True`` into the
encoder of a MONAI SwinUNETR built with the same sizes::

    net = SwinUNETR(in_channels=1, out_channels=14, feature_size=48)
    net.swinViT.load_state_dict(torch.load(OUT), strict=True)

The teacher's backbone is taken when the checkpoint has one (DINO-style
algorithms), otherwise the backbone; ``--src-prefix`` picks another.
SRC is read with mmssl's safe loader (docs/en/checkpoints.md); pass
``--trusted`` only for files you trust.

Example::

    python tools/model_converters/mmssl_to_monai_swinunetr.py \\
        work_dirs/swinunetr3d/epoch_100.pth swin_encoder_monai.pt
"""

from typing import List, Optional

from mmssl.checkpoint.cli import Converted, convert_main
from mmssl.checkpoint.layouts.monai import (
    mmssl_to_monai_swinvit,
)
from mmssl.models.backbones.swin_vit3d import SWIN_VIT_MARKER


def _convert(args, state: dict) -> Converted:
    out = mmssl_to_monai_swinvit(state)
    return Converted(
        out,
        f'Converted {len(out)} SwinViT keys for SwinUNETR.swinViT. '
        f'Saved {args.dst}',
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output state dict for SwinUNETR.swinViT',
        src_prefix_help='backbone prefix in SRC, e.g. backbone. (default: '
        'auto-detect, '
        'teacher preferred)',
        marker=SWIN_VIT_MARKER,
        convert=_convert,
    )


if __name__ == '__main__':
    main()
