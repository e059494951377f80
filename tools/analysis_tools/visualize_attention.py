"""CLS self-attention maps per head and a PCA of patch features (ViT).

    python tools/analysis_tools/visualize_attention.py CONFIG IMG \
        --checkpoint CKPT --output-dir DIR [--img-size S] [--device cpu]

Writes into DIR: ``attention_head{i}.png`` (one heat map per head of the
last block, at the input size), ``attention.png`` (the input, every head
and their mean side by side) and ``pca.png`` (the input and the first
three principal components of the patch features as RGB). The backbone is
the teacher's when the algorithm has one. Only ViT backbones are
supported; others raise a clear error.
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
    parser.add_argument('config', help='config file')
    parser.add_argument('img', help='image file')
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
    parser.add_argument('--device', default='cpu')
    add_trusted_argument(parser)
    add_cfg_options_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    import cv2
    import numpy as np
    import torch

    from mmssl.checkpoint import exit_on_untrusted, trust_from_args
    from mmssl.utils import find_backbone, init_model
    from mmssl.utils.cli import load_tool_config
    from mmssl.visualization.attention import (
        _last_block,
        _num_extra_tokens,
        cls_attention_maps,
        heatmap,
        last_block_attention,
        patch_pca_rgb,
    )
    from mmssl.visualization.mim_reconstruction import (
        _patch_size_of,
        save_panels,
    )

    cfg = load_tool_config(args.config, args.cfg_options, args.allow_new_keys)
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
    size = size // p * p
    grid = (size // p, size // p)

    img = cv2.imread(args.img, cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(f'Cannot read image {args.img}')
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_CUBIC)
    rgb = img[..., ::-1].copy()
    tensor = torch.from_numpy(img).permute(2, 0, 1)[None].to(args.device)
    data = model.data_preprocessor(
        dict(inputs=tensor, data_samples=None), False
    )
    inputs = data['inputs']
    inputs = inputs[0] if isinstance(inputs, (list, tuple)) else inputs

    maps = cls_attention_maps(backbone, inputs, grid)[0]  # (heads, h, w)
    _, tokens = last_block_attention(backbone, inputs)
    pca = patch_pca_rgb(tokens[0], grid, _num_extra_tokens(backbone))

    os.makedirs(args.output_dir, exist_ok=True)
    written = []
    for i, m in enumerate(maps):
        f = osp.join(args.output_dir, f'attention_head{i}.png')
        cv2.imwrite(f, heatmap(m, (size, size))[..., ::-1])
        written.append(f)
    panels = (
        [('input', rgb)]
        + [(f'head {i}', heatmap(m, (size, size))) for i, m in enumerate(maps)]
        + [('mean', heatmap(maps.mean(0), (size, size)))]
    )
    f_all = osp.join(args.output_dir, 'attention.png')
    save_panels(
        panels,
        f_all,
        panel_inches=1.6,
        title=f'CLS attention, last block of '
        f'{path or type(backbone).__name__}',
    )
    pca_img = cv2.resize(pca, (size, size), interpolation=cv2.INTER_NEAREST)
    f_pca = osp.join(args.output_dir, 'pca.png')
    save_panels(
        [('input', rgb), ('patch PCA (RGB)', pca_img)], f_pca, panel_inches=2.0
    )
    written += [f_all, f_pca]
    print(
        f'Backbone: {path or "(model)"}, {len(maps)} heads, patch grid '
        f'{grid[0]}x{grid[1]}. Wrote {len(written)} PNGs to '
        f'{args.output_dir}'
    )
    return dict(
        files=written,
        maps=maps,
        pca=pca,
        num_heads=len(maps),
        attention_sum=np.asarray(maps.sum(axis=(1, 2))),
    )


if __name__ == '__main__':
    main(sys.argv[1:])
