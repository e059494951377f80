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
from mmssl.checkpoint.layouts import MMSSL_MARKER, mmssl_to_dinov3  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='mmssl checkpoint (.pth)')
    parser.add_argument('dst', help='output DINOv3 hub state dict (.pth)')
    parser.add_argument(
        '--src-prefix',
        default=None,
        help="backbone prefix in SRC, e.g. 'teacher.backbone.' or "
        "'backbone.' (default: auto-detect, teacher preferred)",
    )
    add_trusted_argument(parser, 'SRC')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    with exit_on_untrusted():
        ckpt = load_checkpoint(args.src, trusted=trust_from_args(args))
    state = select_backbone(
        unwrap_state_dict(ckpt), args.src_prefix, marker=MMSSL_MARKER
    )
    if 'rope_embed.periods' not in state:
        raise SystemExit(
            f'error: {args.src} holds no rope_embed.periods under the '
            'chosen prefix: not a DINOv3ViT backbone (for a DINOv2 ViT use '
            'mmssl_to_dinov2.py).'
        )
    out = mmssl_to_dinov3(state)
    save_checkpoint_atomic(out, args.dst)
    print(
        f'Converted {len(state)} mmssl keys -> {len(out)} DINOv3 keys. '
        f'Saved {args.dst}'
    )
    return out


if __name__ == '__main__':
    main()
