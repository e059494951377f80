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

import argparse
import os.path as osp
import sys
from typing import List, Optional

sys.path.insert(0, osp.abspath(osp.join(osp.dirname(__file__), '..', '..')))

from mmssl.checkpoint import (  # noqa: E402
    add_trusted_argument,
    exit_on_untrusted,
    load_checkpoint,
    save_checkpoint_atomic,
    select_backbone,
    trust_from_args,
    unwrap_state_dict,
)
from mmssl.checkpoint.layouts.monai import (  # noqa: E402
    mmssl_to_monai_swinvit,
)
from mmssl.models.backbones.swin_vit3d import SWIN_VIT_MARKER  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='mmssl checkpoint (.pth)')
    parser.add_argument('dst', help='output state dict for SwinUNETR.swinViT')
    parser.add_argument(
        '--src-prefix',
        default=None,
        help='backbone prefix in SRC, e.g. backbone. (default: auto-detect, '
        'teacher preferred)',
    )
    add_trusted_argument(parser, 'SRC')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    with exit_on_untrusted():
        ckpt = load_checkpoint(args.src, trusted=trust_from_args(args))
    state = select_backbone(
        unwrap_state_dict(ckpt), args.src_prefix, marker=SWIN_VIT_MARKER
    )
    out = mmssl_to_monai_swinvit(state)
    save_checkpoint_atomic(out, args.dst)
    print(
        f'Converted {len(out)} SwinViT keys for SwinUNETR.swinViT. '
        f'Saved {args.dst}'
    )
    return out


if __name__ == '__main__':
    main()
