# Copyright (c) mmssl contributors. All rights reserved.
"""Export an mmssl VisionTransformer3D checkpoint to MONAI's ViT.

The output is a plain state dict that loads with ``strict=True`` into
``monai.networks.nets.ViT`` (the encoder of UNETR, ``UNETR(...).vit``)
built with the same sizes, ``qkv_bias=True`` (mmssl's default) and
``classification=False``::

    vit = ViT(in_channels=1, img_size=96, patch_size=16, hidden_size=384,
              mlp_dim=1536, num_layers=12, num_heads=6, qkv_bias=True)
    vit.load_state_dict(torch.load(OUT), strict=True)

MONAI's ViT has no CLS token: the CLS token is dropped and LayerScale is
folded into the weights; models with register tokens are refused (see
mmssl/checkpoint/layouts/monai.py). SRC is read with mmssl's safe loader
(docs/en/checkpoints.md); pass ``--trusted`` only for files you trust.

Example::

    python tools/model_converters/mmssl_to_monai_vit.py \\
        work_dirs/dino3d_vit-s16/epoch_100.pth vit3d_monai.pt
"""

from typing import List, Optional

from mmssl.checkpoint.cli import Converted, convert_main
from mmssl.checkpoint.layouts.monai import (
    VIT3D_MARKER,
    mmssl_to_monai_vit,
)


def _convert(args, state: dict) -> Converted:
    out = mmssl_to_monai_vit(state)
    return Converted(
        out,
        f'Converted {len(state)} mmssl keys -> {len(out)} MONAI ViT keys. '
        f'Saved {args.dst}',
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        dst_help='output state dict for MONAI ViT',
        src_prefix_help='backbone prefix in SRC, e.g. backbone. (default: '
        'auto-detect, '
        'teacher preferred)',
        marker=VIT3D_MARKER,
        convert=_convert,
    )


if __name__ == '__main__':
    main()
