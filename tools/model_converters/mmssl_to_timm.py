# Copyright (c) mmssl contributors. All rights reserved.
"""Export an mmssl DINOVisionTransformer checkpoint to timm's ViT layout.

The output loads into the timm model of the same size, e.g.
``timm.create_model('vit_small_patch14_dinov2', num_classes=0,
img_size=518)`` (or ``vit_small_patch14_reg4_dinov2`` with 4 registers).
timm's class token absorbs its position embedding for register models.

Example::

    python tools/model_converters/mmssl_to_timm.py \\
        work_dirs/dinov2_vit-s14/epoch_100.pth vit_small_patch14_mine.pth
"""

import argparse
import os.path as osp
import sys
from typing import List, Optional

import torch

sys.path.insert(0, osp.abspath(osp.join(osp.dirname(__file__), '..', '..')))

from mmssl.models.utils.vit_ckpt_convert import (  # noqa: E402
    load_checkpoint_file,
    mmssl_to_timm,
    select_prefix,
    unwrap_checkpoint,
)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='mmssl checkpoint (.pth)')
    parser.add_argument('dst', help='output timm state dict (.pth)')
    parser.add_argument(
        '--src-prefix',
        default=None,
        help='backbone prefix in SRC (default: auto-detect, teacher '
        'preferred)',
    )
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    state = select_prefix(
        unwrap_checkpoint(load_checkpoint_file(args.src)), args.src_prefix
    )
    out = mmssl_to_timm(state)
    torch.save(out, args.dst)
    print(
        f'Converted {len(state)} mmssl keys -> {len(out)} timm keys. '
        f'Saved {args.dst}'
    )
    return out


if __name__ == '__main__':
    main()
