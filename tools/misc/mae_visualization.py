"""Picture of an MAE / SimMIM reconstruction of one image or a folder.

    python tools/misc/mae_visualization.py IMG_OR_FOLDER CONFIG CKPT OUT \
        --device cpu|cuda [--mask-ratio R] [--seed S]

One PNG per image with four panels: the original, the masked input, the
reconstruction, and the reconstruction with the visible patches of the
original pasted back. OUT is the PNG for one image, or a folder for a
folder of images (``OUT/<relative path>.png``). Images are decoded like
training data (``LoadImageRobust``: 8/16-bit, grey, RGBA, any size); bad
files are skipped and named. The short side is resized to the model's
input size and the centre cropped, so non-square images keep their
aspect. MAE ``norm_pix`` targets are un-normalised with each original
patch's mean and variance. Pass ``none`` as CKPT to use a randomly
initialised model.
"""

import argparse
import os
import os.path as osp
import sys


def parse_args(argv=None):
    from mmssl.checkpoint import add_trusted_argument
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('img', help='image file or folder')
    parser.add_argument('config', help='config of an MAE/SimMIM algorithm')
    parser.add_argument('checkpoint', help="checkpoint, or 'none'")
    parser.add_argument(
        'out_file', help='output PNG (a folder for a folder of images)'
    )
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


def reconstruct_image(model, img, size, args, out_file) -> str:
    """Write the four-panel picture of one BGR image to ``out_file``."""
    import torch

    from mmssl.visualization.images import center_crop_square
    from mmssl.visualization.mim_reconstruction import (
        mim_reconstruct,
        mim_style,
        save_panels,
        to_uint8_rgb,
    )

    img = center_crop_square(img, size)
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
    if osp.dirname(out_file):
        os.makedirs(osp.dirname(out_file), exist_ok=True)
    save_panels(
        panels,
        out_file,
        title=f'{type(model).__name__} ({mim_style(model)}), seed {args.seed}',
    )
    return out_file


def main(argv=None) -> str | list:
    args = parse_args(argv)
    from mmssl.apis import init_model
    from mmssl.checkpoint import exit_on_untrusted, trust_from_args
    from mmssl.config import load_config
    from mmssl.visualization.images import (
        list_images,
        output_stem,
        read_images,
    )
    from mmssl.visualization.mim_reconstruction import mim_style

    if args.mask_ratio is not None and not 0 < args.mask_ratio < 1:
        raise ValueError(
            f'--mask-ratio must be in (0, 1), got {args.mask_ratio}'
        )
    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    paths = list_images(args.img)
    ckpt = None if args.checkpoint.lower() == 'none' else args.checkpoint
    with exit_on_untrusted():
        model = init_model(
            cfg, ckpt, device=args.device, trusted=trust_from_args(args)
        )
    mim_style(model)  # clear error for other algorithms
    size = args.img_size or cfg.model.backbone.get('img_size', 224)
    size = size[0] if isinstance(size, (tuple, list)) else int(size)
    folder = osp.isdir(args.img)
    written, skipped = [], []
    for path, img in read_images(paths, 'reconstructions', skipped):
        out_file = args.out_file
        if folder:
            name = output_stem(path, args.img) + '.png'
            out_file = osp.join(args.out_file, name)
        written.append(reconstruct_image(model, img, size, args, out_file))
    if not written:
        raise SystemExit(f'error: no readable image in {args.img}')
    print(
        f'Wrote {len(written)} picture(s) to {args.out_file}; '
        f'{len(skipped)} bad file(s) skipped.'
    )
    return written if folder else written[0]


if __name__ == '__main__':
    main(sys.argv[1:])
