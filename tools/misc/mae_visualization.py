"""Picture of an MAE / SimMIM reconstruction of one image.

    python tools/misc/mae_visualization.py IMG CONFIG CKPT OUT.png \
        --device cpu|cuda [--mask-ratio R] [--seed S]

One PNG with four panels: the original (resized to the model's input
size), the masked input, the reconstruction, and the reconstruction with
the visible patches of the original pasted back. MAE ``norm_pix`` targets
are un-normalised with each original patch's mean and variance. Pass
``none`` as CKPT to use a randomly initialised model.
"""

import os.path as _osp
import sys

# run from a checkout without installing mmssl
sys.path.insert(0, _osp.abspath(_osp.join(_osp.dirname(__file__), '..', '..')))

import argparse
import os
import os.path as osp
import sys


def parse_args(argv=None):
    from mmssl.checkpoint import add_trusted_argument
    from mmssl.utils.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('img', help='image file')
    parser.add_argument('config', help='config of an MAE/SimMIM algorithm')
    parser.add_argument('checkpoint', help="checkpoint, or 'none'")
    parser.add_argument('out_file', help='output PNG')
    parser.add_argument('--device', default='cpu')
    parser.add_argument(
        '--mask-ratio',
        type=float,
        default=None,
        help="fraction of masked patches (default: the model's)",
    )
    parser.add_argument(
        '--mask-patch-size',
        type=int,
        default=None,
        help='SimMIM mask square side in pixels',
    )
    parser.add_argument(
        '--img-size',
        type=int,
        default=None,
        help="input side (default: the backbone's)",
    )
    parser.add_argument('--seed', type=int, default=0)
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None) -> str:
    args = parse_args(argv)
    import cv2
    import torch

    from mmssl.checkpoint import exit_on_untrusted, trust_from_args
    from mmssl.utils import init_model
    from mmssl.utils.cli import load_tool_config
    from mmssl.visualization.mim_reconstruction import (
        mim_reconstruct,
        mim_style,
        save_panels,
        to_uint8_rgb,
    )

    if args.mask_ratio is not None and not 0 < args.mask_ratio < 1:
        raise ValueError(
            f'--mask-ratio must be in (0, 1), got {args.mask_ratio}'
        )
    cfg = load_tool_config(args.config, args.cfg_options, args.allow_new_keys)
    ckpt = None if args.checkpoint.lower() == 'none' else args.checkpoint
    with exit_on_untrusted():
        model = init_model(
            cfg, ckpt, device=args.device, trusted=trust_from_args(args)
        )
    style = mim_style(model)
    size = args.img_size or cfg.model.backbone.get('img_size', 224)
    size = size[0] if isinstance(size, (tuple, list)) else int(size)

    img = cv2.imread(args.img, cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(f'Cannot read image {args.img}')
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_CUBIC)
    tensor = torch.from_numpy(img).permute(2, 0, 1)[None]  # (1, 3, H, W)
    pre = model.data_preprocessor
    data = pre(dict(inputs=tensor.to(args.device), data_samples=None), False)
    inputs = data['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    out = mim_reconstruct(
        model, inputs, args.mask_ratio, args.seed, args.mask_patch_size
    )
    is_rgb = bool(getattr(pre, '_channel_conversion', False))
    mean = getattr(pre, 'mean', torch.zeros(3))
    std = getattr(pre, 'std', torch.ones(3))
    ratio = out['mask'].mean().item()
    panels = [
        (name, to_uint8_rgb(out[key][0], mean, std, is_rgb))
        for name, key in (
            ('original', 'original'),
            (f'masked ({ratio:.0%})', 'masked'),
            ('reconstruction', 'reconstruction'),
            ('reconstruction + visible', 'pasted'),
        )
    ]
    if osp.dirname(args.out_file):
        os.makedirs(osp.dirname(args.out_file), exist_ok=True)
    save_panels(
        panels,
        args.out_file,
        title=f'{type(model).__name__} ({style}), seed {args.seed}',
    )
    print(f'Wrote {args.out_file}')
    return args.out_file


if __name__ == '__main__':
    main(sys.argv[1:])
