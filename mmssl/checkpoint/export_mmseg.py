# Copyright (c) mmssl contributors. All rights reserved.
"""The export to mmsegmentation / mmdetection behind
``tools/model_converters/mmssl_to_mmseg.py`` (the key maps are in
:mod:`.layouts.mmseg`)."""

import argparse
import os.path as osp

from .cli import Converted
from .layouts.beit import beit_to_mmseg
from .layouts.dinov2 import MMSSL_MARKER
from .layouts.mmseg import mmssl_to_mmdet_resnet, mmssl_to_mmseg_vit

#: Key suffix that only a ResNet backbone has (its first block).
RESNET_MARKER = 'layer1.0.conv1.weight'


def mmseg_marker(args: argparse.Namespace, state: dict) -> str:
    """Settle ``--arch auto`` from the keys; the backbone marker of it."""
    if args.arch == 'auto':
        vit = any(k.endswith(MMSSL_MARKER) for k in state)
        resnet = any(k.endswith(RESNET_MARKER) for k in state)
        if vit == resnet:
            raise SystemExit(
                f'error: cannot tell a ViT from a ResNet in {args.src} '
                f'(ViT keys: {vit}, ResNet keys: {resnet}); pass --arch.'
            )
        args.arch = 'vit' if vit else 'resnet'
        # BEiT's blocks (relative positions, q/v biases): mmseg's BEiT
        if vit and any(k.endswith('attn.q_bias') for k in state):
            args.arch = 'beit'
    return RESNET_MARKER if args.arch == 'resnet' else MMSSL_MARKER


def convert_for_mmseg(args: argparse.Namespace, state: dict) -> Converted:
    """A selected backbone -> the checkpoint mmseg / mmdet load."""
    source = osp.basename(args.src)
    if args.arch == 'resnet':
        out, depth = mmssl_to_mmdet_resnet(state)
        meta = dict(converted_from='mmssl', source=source, depth=depth)
        return Converted(
            dict(state_dict=out, meta=meta),
            f'Converted ResNet-{depth} ({len(out)} keys, prefix '
            "'backbone.'). Load it with init_cfg=dict(type='Pretrained', "
            f"checkpoint='{args.dst}', prefix='backbone.'). Saved {args.dst}",
        )
    if args.arch == 'beit':
        out, options = beit_to_mmseg(state)
        meta = dict(converted_from='mmssl', source=source, **options)
        return Converted(
            dict(state_dict=out, meta=meta),
            f"Converted a BEiT ({len(out)} keys) to mmseg's BEiT; its "
            f'backbone config needs {options}. Load it with '
            f"model.pretrained='{args.dst}'. Saved {args.dst}",
        )
    out, options = mmssl_to_mmseg_vit(state)
    backbone = {k: v for k, v in options.items() if k != 'pretrain_grid'}
    meta = dict(converted_from='mmssl', source=source, **options)
    return Converted(
        dict(state_dict=out, meta=meta),
        f'Converted a ViT ({len(out)} keys) to mmseg VisionTransformer; its '
        f'backbone config needs {backbone} (num_heads as in the source). '
        f"Load it with model.pretrained='{args.dst}'. Saved {args.dst}",
    )


__all__ = ['RESNET_MARKER', 'convert_for_mmseg', 'mmseg_marker']
