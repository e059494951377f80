"""CLS self-attention maps per head and a PCA of patch features (ViT).

    python tools/analysis_tools/visualize_attention.py CONFIG IMG_OR_FOLDER \
        --checkpoint CKPT --output-dir DIR [--img-size S] [--overlay] \
        [--device cpu]

Writes into DIR: ``attention_head{i}.png`` (one heat map per head of the
last block, at the input size), ``attention.png`` (the input, every head
and their mean side by side) and ``pca.png`` (the input and the first
three principal components of the patch features as RGB). For a folder,
every image below it gets these files in ``DIR/<relative path>/``.
Images are decoded like training data (``LoadImageRobust``: 8/16-bit,
grey, RGBA, any size; or the config's ``LoadMultiChannelTiff`` for a
multi-channel config, whose images are drawn as a colour composite, see
``--rgb-channels``); bad files are skipped and named. The aspect ratio
is kept: the short side is resized to S (default: the backbone's
img_size), both sides rounded to the patch size. ``--overlay`` draws the
maps over the image. The backbone is the teacher's when the algorithm
has one. Only ViT backbones are supported; others raise a clear error.
"""

import argparse
import os
import os.path as osp
import sys


def parse_args(argv=None):
    from mmssl.checkpoint import add_trusted_argument
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='config file')
    parser.add_argument('img', help='image file or folder')
    parser.add_argument(
        '--checkpoint',
        default=None,
        help='checkpoint (random init when omitted)',
    )
    parser.add_argument('--output-dir', required=True)
    parser.add_argument(
        '--img-size',
        type=int,
        default=None,
        help="input side (default: the backbone's)",
    )
    parser.add_argument(
        '--backbone-path',
        default=None,
        help='dotted path of the ViT inside the model',
    )
    parser.add_argument(
        '--overlay',
        action='store_true',
        help='draw the maps over the image (half transparent)',
    )
    parser.add_argument(
        '--rgb-channels',
        type=int,
        nargs=3,
        default=None,
        metavar=('R', 'G', 'B'),
        help='multi-channel images: show these channels as red, green and '
        'blue (-1: none); default: every channel in its own colour '
        '(0 blue, 1 green, 2 red, 3 magenta, 4 cyan, 5 yellow), added',
    )
    parser.add_argument('--device', default='cpu')
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    return parser.parse_args(argv)


def save_pictures(rgb, maps, pca, out_dir: str, title: str, on_image):
    """Write the per-head maps, the panel and the PCA picture.

    Args:
        rgb (np.ndarray): The input, (H, W, 3) uint8.
        maps (np.ndarray): Attention maps, (heads, h, w).
        pca (np.ndarray): PCA colours, (h, w, 3) uint8.
        out_dir (str): Output folder.
        title (str): Panel title.
        on_image (bool): Blend the maps over the image (``--overlay``).

    Returns:
        list[str]: The files written.
    """
    import cv2

    from mmssl.visualization.attention import heatmap
    from mmssl.visualization.images import overlay
    from mmssl.visualization.mim_reconstruction import save_panels

    h, w = rgb.shape[:2]

    def show(picture):
        return overlay(rgb, picture) if on_image else picture

    os.makedirs(out_dir, exist_ok=True)
    written = []
    for i, m in enumerate(maps):
        f = osp.join(out_dir, f'attention_head{i}.png')
        cv2.imwrite(f, show(heatmap(m, (w, h)))[..., ::-1])
        written.append(f)
    panels = (
        [('input', rgb)]
        + [(f'head {i}', show(heatmap(m, (w, h)))) for i, m in enumerate(maps)]
        + [('mean', show(heatmap(maps.mean(0), (w, h))))]
    )
    f_all = osp.join(out_dir, 'attention.png')
    save_panels(panels, f_all, panel_inches=1.6, title=title)
    pca_img = cv2.resize(pca, (w, h), interpolation=cv2.INTER_NEAREST)
    f_pca = osp.join(out_dir, 'pca.png')
    save_panels(
        [('input', rgb), ('patch PCA (RGB)', show(pca_img))],
        f_pca,
        panel_inches=2.0,
    )
    return written + [f_all, f_pca]


def draw_image(tool, img_bgr, out_dir: str, title: str) -> dict:
    """Attention and PCA pictures of one image; returns the arrays.

    ``img_bgr`` is a BGR uint8 image, or the (H, W, C) float32 output of
    a multi-channel loader (drawn with ``channels_to_rgb``).
    """
    import numpy as np
    import torch

    from mmssl.visualization.attention import (
        _num_extra_tokens,
        cls_attention_maps,
        last_block_attention,
        patch_pca_rgb,
    )
    from mmssl.visualization.images import channels_to_rgb, resize_keep_aspect

    model, backbone, size, p, args = tool
    img = resize_keep_aspect(img_bgr, size, multiple=p)
    h, w = img.shape[:2]
    img = img.reshape(h, w, -1)
    grid = (h // p, w // p)
    if img.dtype == np.uint8 and img.shape[2] == 3:  # LoadImageRobust
        rgb = img[..., ::-1].copy()
    else:  # a multi-channel loader's (H, W, C) float32
        rgb = channels_to_rgb(img, args.rgb_channels)
    tensor = torch.from_numpy(np.ascontiguousarray(img))
    tensor = tensor.permute(2, 0, 1)[None].to(args.device)
    data = model.data_preprocessor(
        dict(inputs=tensor, data_samples=None), False
    )
    inputs = data['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    maps = cls_attention_maps(backbone, inputs, grid)[0]  # (heads, h, w)
    _, tokens = last_block_attention(backbone, inputs)
    pca = patch_pca_rgb(tokens[0], grid, _num_extra_tokens(backbone))
    files = save_pictures(rgb, maps, pca, out_dir, title, args.overlay)
    return dict(
        files=files,
        maps=maps,
        pca=pca,
        num_heads=len(maps),
        grid=grid,
        input=rgb,
        attention_sum=np.asarray(maps.sum(axis=(1, 2))),
    )


def main(argv=None) -> dict:
    args = parse_args(argv)
    from mmssl.apis import init_model
    from mmssl.checkpoint import exit_on_untrusted, trust_from_args
    from mmssl.config import load_config
    from mmssl.evaluation.folders import config_loader
    from mmssl.models.utils import find_backbone
    from mmssl.visualization.attention import _last_block
    from mmssl.visualization.images import (
        list_images,
        output_stem,
        read_images,
    )
    from mmssl.visualization.mim_reconstruction import _patch_size_of

    cfg = load_config(
        args.config, args.cfg_options, args.allow_new_keys, exit_on_error=True
    )
    paths = list_images(args.img)
    with exit_on_untrusted():
        model = init_model(
            cfg,
            args.checkpoint,
            device=args.device,
            trusted=trust_from_args(args),
        )
    backbone, path = (
        find_backbone(model, path=args.backbone_path)
        if (args.backbone_path is not None)
        else find_backbone(model)
    )
    _last_block(backbone)  # clear error for non-ViT backbones
    p = _patch_size_of(backbone)
    size = args.img_size or cfg.model.get('backbone', {}).get('img_size', 224)
    size = size[0] if isinstance(size, (tuple, list)) else int(size)
    tool = (model, backbone, size, p, args)
    title = f'CLS attention, last block of {path or type(backbone).__name__}'
    folder = len(paths) > 1 or osp.isdir(args.img)
    results, skipped = {}, []
    loader = config_loader(cfg)  # None: the RGB decoder
    for img_path, img in read_images(paths, 'attention maps', skipped, loader):
        out_dir = args.output_dir
        if folder:
            out_dir = osp.join(out_dir, output_stem(img_path, args.img))
        results[img_path] = draw_image(tool, img, out_dir, title)
    if not results:
        raise SystemExit(f'error: no readable image in {args.img}')
    written = [f for r in results.values() for f in r['files']]
    first = next(iter(results.values()))
    print(
        f'Backbone: {path or "(model)"}, {first["num_heads"]} heads, patch '
        f'{p}. Wrote {len(written)} PNGs for {len(results)} image(s) to '
        f'{args.output_dir}; {len(skipped)} bad file(s) skipped.'
    )
    return dict(first, files=written, images=results, skipped=skipped)


if __name__ == '__main__':
    main(sys.argv[1:])
