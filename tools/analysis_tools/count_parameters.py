"""Count the parameters of a model config, in total and per part.

    python tools/analysis_tools/count_parameters.py CONFIG [--per-block]
        [--depth N] [--cfg-options k=v ...]
    python tools/analysis_tools/count_parameters.py --presets

The model is built on the ``meta`` device (no memory, no initialisation),
so even ViT-g configs are counted in about a second.
"""

import argparse
import sys


def parse_args(argv=None):
    from mmssl.config.cli import add_cfg_options_arguments

    parser = argparse.ArgumentParser(
        description='Count total and trainable parameters of a config.'
    )
    parser.add_argument('config', nargs='?', help='config file')
    parser.add_argument(
        '--per-block',
        action='store_true',
        help='also list every block of the backbone',
    )
    parser.add_argument(
        '--depth',
        type=int,
        default=1,
        help='nesting depth of the listed modules (1: '
        'backbone, neck, head, teacher, ...)',
    )
    parser.add_argument(
        '--block-parent',
        default='backbone',
        help='module whose blocks --per-block lists',
    )
    parser.add_argument(
        '--presets',
        action='store_true',
        help='print the sizes of the ViT presets',
    )
    parser.add_argument(
        '--no-meta',
        action='store_true',
        help='build on the CPU instead of the meta device',
    )
    add_cfg_options_arguments(parser)
    args = parser.parse_args(argv)
    if args.config is None and not args.presets:
        parser.error('give a CONFIG or --presets')
    return args


def _arch_note(cfg_backbone) -> str:
    if not isinstance(cfg_backbone, dict):
        return ''
    arch = cfg_backbone.get('arch')
    text = str(cfg_backbone.get('type', ''))
    if arch is not None:
        text += f', arch={arch if isinstance(arch, str) else "custom"}'
    if cfg_backbone.get('patch_size') is not None:
        text += f', patch_size={cfg_backbone["patch_size"]}'
    return text


def presets_table(meta: bool = True) -> str:
    """Text table of the ViT presets against their published sizes."""
    from mmssl.apis.param_count import (
        VIT_PRESETS,
        build_on_meta,
        count_params,
        dino_vit_presets,
        human_count,
    )
    from mmssl.registry import MODELS

    lines = [f'{"preset":<36}{"params":>10}{"published":>11}{"diff":>8}']
    for label, cfg, ref in VIT_PRESETS + dino_vit_presets():
        try:
            model = build_on_meta(MODELS.build, cfg, meta=meta)
        except Exception as err:  # noqa: BLE001 - report and go on
            lines.append(f'{label:<36} cannot be built: {err}')
            continue
        total, _ = count_params(model)
        lines.append(
            f'{label:<36}{human_count(total):>10}'
            f'{human_count(int(ref)):>11}'
            f'{100 * (total - ref) / ref:>+7.1f}%'
        )
    return '\n'.join(lines)


def main(argv=None) -> str:
    args = parse_args(argv)
    from mmssl.apis.param_count import (
        build_on_meta,
        format_table,
        parameter_table,
    )
    from mmssl.config import load_config
    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    out = []
    if args.config:
        cfg = load_config(
            args.config,
            args.cfg_options,
            args.allow_new_keys,
            exit_on_error=True,
        )
        model = build_on_meta(MODELS.build, cfg.model, meta=not args.no_meta)
        rows = parameter_table(
            model,
            depth=args.depth,
            per_block=args.per_block,
            block_parent=args.block_parent,
        )
        backbone = _arch_note(cfg.model.get('backbone'))
        title = f'{args.config}\nalgorithm: {cfg.model.get("type")}'
        if backbone:
            title += f'; backbone: {backbone}'
        out.append(format_table(rows, title))
    if args.presets:
        out.append(presets_table(meta=not args.no_meta))
    text = '\n\n'.join(out)
    print(text)
    return text


if __name__ == '__main__':
    main(sys.argv[1:])
