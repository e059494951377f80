# Copyright (c) mmssl contributors. All rights reserved.
"""Time mmssl against the reference DINOv2 code, interleaved in one process.

Both sides get the same crops (2 global crops at 224 and 8 local crops at
98 per image, ``--batch`` images, ViT-S/14) and run alternately, the order
flipping every repeat, so that machine load hits both alike. Two
measurements:

- ``backbone``: student forward + backward of the multi-crop batch with
  ``--drop-path`` (linear schedule on both sides);
- ``step``: a whole DINOv2 training step: teacher forward, student forward,
  DINO + iBOT + KoLeo losses with Sinkhorn-Knopp targets, backward,
  gradient clipping, AdamW with layer-wise lr decay, teacher EMA. mmssl runs
  the ViT-S/14 DINOv2 config; the reference side is assembled here from the
  reference's own modules (backbone, head, losses, parameter groups,
  update rule), since its training class needs xFormers and CUDA.

The reference code is imported from ``--reference-root`` (a checkout of
facebookresearch/dinov2); nothing of it is copied into mmssl. Results are
medians of ``--repeats`` timed repeats after ``--warmup`` untimed ones, with
the ratio reference / mmssl (above 1: mmssl is faster) and the machine load.

Extra rows (``--variants``) time features of mmssl that the reference
lacks, each against the same reference run: ``compile`` (the backbone's
``compile_blocks``: each block's residual branches through
``torch.compile``, inductor by default, C++ on the CPU), ``packed``
(``forward_packed``: token-wise layers once over the tokens of both crop
sizes; in the step, ``model.pack_crops=True``) and ``compile+packed``.
The ``plain`` row is the eager per-size model, as a config's defaults
build it: ``drop_path_mode='static'``. ``--drop-path-mode`` repeats
every row for each listed stochastic-depth mode of mmssl (``static``,
``bernoulli``: the usual per-sample draw, ``fixed``: DINOv2's count,
``fixed_stochastic``), rows other than ``static`` named
``mmssl[bernoulli]`` etc.; the reference keeps its own rule. Compiled
variants need ``--warmup`` of at least 2 (the first calls compile; a
``bernoulli`` row then recompiles with a dynamic sample count).

Example::

    python .dev_scripts/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 10
    python .dev_scripts/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 6 --warmup 3 \\
        --variants plain compile packed compile+packed --clock cpu
    python .dev_scripts/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 8 --clock cpu \\
        --drop-path-mode static bernoulli fixed fixed_stochastic
    python .dev_scripts/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --device cuda --batch 32 --amp
"""

import argparse
import os.path as osp

import torch

from mmssl.models.layers.drop_path import DROP_PATH_MODES
from mmssl_dev.reference_dinov2 import (
    init_single_process_group,
    load_reference,
)
from mmssl_dev.speed_vs_reference import (
    CONFIG_MODE,
    VARIANTS,
    arch_of,
    backbone_fns,
    default_peak,
    interleave,
    load_average,
    recipe_config,
    report,
    step_flops,
    step_fns,
)

#: The repository's configs/ (the mmssl side runs its DINOv2 recipe).
CONFIGS = osp.abspath(osp.join(osp.dirname(__file__), '..', 'configs'))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reference-root', required=True)
    parser.add_argument('--what', choices=['backbone', 'step', 'both'])
    parser.add_argument('--batch', type=int, default=2)
    parser.add_argument('--drop-path', type=float, default=0.4)
    parser.add_argument('--step-drop-path', type=float, default=None)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--device', default='cpu', help='cpu or cuda (both sides alike)'
    )
    parser.add_argument(
        '--amp', action='store_true', help='bf16 autocast on both sides'
    )
    parser.add_argument(
        '--variants',
        nargs='+',
        default=['plain'],
        choices=VARIANTS,
        help='mmssl rows, each timed against the same reference run',
    )
    parser.add_argument(
        '--drop-path-mode',
        nargs='+',
        default=[CONFIG_MODE],
        choices=DROP_PATH_MODES,
        help='mmssl stochastic-depth modes; every row once per mode '
        f"(default: {CONFIG_MODE!r}, the DINO-family configs' mode)",
    )
    parser.add_argument(
        '--clock',
        choices=['wall', 'cpu'],
        default='wall',
        help="wall: elapsed time; cpu: this process's CPU time (CPU "
        'runs on a shared machine: time spent descheduled is not counted)',
    )
    parser.add_argument(
        '--arch',
        choices=['small', 'large'],
        default='small',
        help='ViT-S/14 or ViT-L/14 on both sides',
    )
    parser.add_argument(
        '--with-cp',
        choices=['none', 'full', 'selective'],
        default='none',
        help="mmssl's activation checkpointing (the reference has none)",
    )
    parser.add_argument(
        '--tf32',
        action='store_true',
        help='TF32 matmuls in fp32 runs on CUDA, on both sides',
    )
    parser.add_argument(
        '--peak-tflops',
        type=float,
        default=None,
        help='peak TFLOP/s for the MFU of the step (default: datasheet '
        'peak of H100/H200/A100)',
    )
    parser.add_argument(
        '--compile-backend',
        default=None,
        help='torch.compile backend of the compile variants (inductor)',
    )
    args = parser.parse_args(argv)
    args.what = args.what or 'both'
    return args


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(args.seed)
    from mmengine.logging import MMLogger

    MMLogger.get_instance('mmengine').setLevel('WARNING')  # init reports
    ref = load_reference(args.reference_root)
    device = args.device
    where = device
    if device.startswith('cuda'):
        where = f'{device} ({torch.cuda.get_device_name(device)})'
    print(
        f'torch {torch.__version__}, {where}, {args.threads} thread(s), '
        f'ViT-{arch_of(args)[0].upper()}/14, with_cp {args.with_cp}, '
        f'batch {args.batch} (2x224 + 8x98 crops), '
        f'{"bf16 autocast" if args.amp else "fp32"}'
        f'{" (TF32 matmuls)" if args.tf32 and not args.amp else ""}, '
        f'mmssl rows {" ".join(args.variants)}, drop-path modes '
        f'{" ".join(args.drop_path_mode)}, {args.clock} clock, '
        f'load average {load_average()}'
    )
    timing = dict(
        repeats=args.repeats,
        warmup=args.warmup,
        device=device,
        amp=args.amp,
        clock=args.clock,
    )
    if args.what in ('backbone', 'both'):
        fns = backbone_fns(ref, args)
        times = interleave(fns, **timing)
        report(
            f'ViT-{arch_of(args)[0].upper()}/14 forward+backward, '
            f'drop_path_rate={args.drop_path}',
            times,
        )
        del fns
    if args.what in ('step', 'both'):
        init_single_process_group(device)
        config = recipe_config(arch_of(args), CONFIGS)
        fns, drop_path = step_fns(ref, args, config)
        times = interleave(fns, **timing)
        report(
            f'whole DINOv2 step, drop_path_rate={drop_path}',
            times,
            step_flops(args, config),
            args.peak_tflops or default_peak(args),
        )
    print(f'load average at the end {load_average()}')


if __name__ == '__main__':
    main()
