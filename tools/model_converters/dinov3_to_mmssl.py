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

import os.path as osp
from typing import List, Optional

from mmssl.checkpoint import add_prefix
from mmssl.checkpoint.cli import (
    NO_STRICT_OPTION,
    PREFIX_OPTION,
    Converted,
    convert_main,
    read_state_dict,
    vit_meta,
)
from mmssl.checkpoint.layouts import (
    DINOV3_MARKER,
    HF_DINOV3_MARKER,
    dinov3_to_mmssl,
    hf_dinov3_rope_periods,
    hf_dinov3_to_mmssl,
    read_hf_config,
)

FORMAT_OPTION = (
    '--format',
    dict(
        choices=['auto', 'hub', 'hf'],
        default='auto',
        help='key layout of SRC: facebookresearch/dinov3 hub or HF '
        'transformers (default: auto-detect)',
    ),
)


def _read(args) -> dict:
    if args.src.endswith('.safetensors'):
        from safetensors.torch import load_file

        return load_file(args.src)
    return read_state_dict(args)


def _marker(args, state: dict) -> str:
    """Settle ``--format auto`` from the keys, then its backbone marker."""
    if args.format == 'auto':
        hf = any(k.endswith(HF_DINOV3_MARKER) for k in state)
        args.format = 'hf' if hf else 'hub'
    return HF_DINOV3_MARKER if args.format == 'hf' else DINOV3_MARKER


def _convert(args, state: dict) -> Converted:
    fmt = args.format
    convert = hf_dinov3_to_mmssl if fmt == 'hf' else dinov3_to_mmssl
    converted = convert(state, strict=not args.no_strict)
    hf_config = read_hf_config(args.src) if fmt == 'hf' else None
    if hf_config is not None:  # RoPE periods from rope_theta
        converted['rope_embed.periods'] = hf_dinov3_rope_periods(hf_config)
    prefixes = args.prefix if args.prefix is not None else ['backbone.']
    out = add_prefix(converted, prefixes)
    meta = vit_meta(converted)
    return Converted(
        dict(
            state_dict=out,
            meta=dict(
                converted_from=f'dinov3-{fmt}',
                source=osp.basename(args.src),
                **meta,
            ),
        ),
        f'Converted {len(state)} DINOv3 ({fmt}) keys -> {len(converted)} '
        f'mmssl keys x {len(prefixes)} prefix(es) {prefixes}; '
        f'{meta["num_layers"]} blocks, embed {meta["embed_dims"]}, patch '
        f'{meta["patch_size"]}, {meta["num_register_tokens"]} registers. '
        f'Saved {args.dst}',
        returned=out,
    )


def main(argv: Optional[List[str]] = None) -> dict:
    return convert_main(
        argv,
        doc=__doc__,
        src_help='DINOv3 checkpoint (.pth, .safetensors)',
        dst_help='output mmssl checkpoint (.pth)',
        src_prefix_help='prefix of the backbone keys in SRC (default: '
        'auto-detect, '
        'teacher preferred)',
        marker=_marker,
        convert=_convert,
        options=[FORMAT_OPTION, PREFIX_OPTION, NO_STRICT_OPTION],
        src_prefix_at=2,
        read=_read,
    )


if __name__ == '__main__':
    main()
