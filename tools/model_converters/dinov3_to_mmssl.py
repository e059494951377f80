# Copyright (c) mmssl contributors. All rights reserved.
"""Convert a DINOv3 ViT checkpoint to mmssl's DINOv3ViT.

Accepts the torch.hub files of facebookresearch/dinov3 (e.g.
``dinov3_vits16_pretrain_lvd1689m-08c60483.pth``), DINOv3 training
checkpoints holding a ``teacher`` / ``backbone.`` prefix (the teacher
backbone is taken), and HF transformers ``DINOv3ViTModel`` weights
(``model.safetensors``; ``--format hf``, or detected from the keys).

SRC is read with mmssl's safe loader (docs/en/checkpoints.md): tensors and
what mmengine checkpoints hold load; a file that pickles anything else is
refused unless you pass ``--trusted`` (only for files you trust).
``.safetensors`` files hold tensors only and never run code.

Example::

    python tools/model_converters/dinov3_to_mmssl.py \\
        dinov3_vits16_pretrain_lvd1689m-08c60483.pth \\
        checkpoints/dinov3_vits16_mmssl.pth
    # initialise both student and teacher of a DINOv3 config:
    python tools/model_converters/dinov3_to_mmssl.py SRC DST \\
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
from mmssl.checkpoint.layouts import (  # noqa: E402
    DINOV3_MARKER,
    HF_DINOV3_MARKER,
    dinov3_to_mmssl,
    hf_dinov3_to_mmssl,
)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='DINOv3 checkpoint (.pth, .safetensors)')
    parser.add_argument('dst', help='output mmssl checkpoint (.pth)')
    parser.add_argument(
        '--format',
        choices=['auto', 'hub', 'hf'],
        default='auto',
        help='key layout of SRC: facebookresearch/dinov3 hub or HF '
        'transformers (default: auto-detect)',
    )
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


def _load(args: argparse.Namespace) -> dict:
    if args.src.endswith('.safetensors'):
        from safetensors.torch import load_file

        return load_file(args.src)
    with exit_on_untrusted():
        ckpt = load_checkpoint(args.src, trusted=trust_from_args(args))
    return unwrap_state_dict(ckpt)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    state = _load(args)
    fmt = args.format
    if fmt == 'auto':
        hf = any(k.endswith(HF_DINOV3_MARKER) for k in state)
        fmt = 'hf' if hf else 'hub'
    marker = HF_DINOV3_MARKER if fmt == 'hf' else DINOV3_MARKER
    state = select_backbone(state, args.src_prefix, marker=marker)
    convert = hf_dinov3_to_mmssl if fmt == 'hf' else dinov3_to_mmssl
    converted = convert(state, strict=not args.no_strict)
    prefixes = args.prefix if args.prefix is not None else ['backbone.']
    out = add_prefix(converted, prefixes)
    depth = len({k.split('.')[1] for k in converted if k.startswith('layers')})
    regs = converted.get('register_tokens')
    num_regs = 0 if regs is None else int(regs.shape[1])
    embed = int(converted['cls_token'].shape[-1])
    patch = int(converted['patch_embed.projection.weight'].shape[-1])
    meta = dict(
        converted_from=f'dinov3-{fmt}',
        source=osp.basename(args.src),
        embed_dims=embed,
        num_layers=depth,
        num_register_tokens=num_regs,
        patch_size=patch,
    )
    save_checkpoint_atomic(dict(state_dict=out, meta=meta), args.dst)
    print(
        f'Converted {len(state)} DINOv3 ({fmt}) keys -> {len(converted)} '
        f'mmssl keys x {len(prefixes)} prefix(es) {prefixes}; {depth} '
        f'blocks, embed {embed}, patch {patch}, {num_regs} registers. '
        f'Saved {args.dst}'
    )
    return out


if __name__ == '__main__':
    main()
