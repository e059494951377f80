# Copyright (c) mmssl contributors. All rights reserved.
"""Kernels one DINOv2 step launches, per phase, mmssl against the reference.

Runs the steps of ``benchmark_vs_reference.py --what step`` (same crops,
same config; one mmssl row per ``--variants``) once each under a
dispatch mode that counts the aten ops that launch a kernel (views and
bookkeeping left out), per phase: teacher and student backbone and head,
Sinkhorn-Knopp, losses, clipping, EMA, the backward pass and the rest
(the optimizer). On a GPU a ViT-S step at batch 32 waits on kernel
launches (a few percent MFU), so these counts, exact on the CPU, tell
where a launch-bound step loses time before a GPU is at hand. On the
CPU torch's AdamW loops over parameters where on CUDA it uses foreach
kernels, so compare the optimizer row on a GPU only::

    python .dev_scripts/count_kernels.py --reference-root .gpu_ref
    python .dev_scripts/count_kernels.py --reference-root .gpu_ref \\
        --variants plain packed --batch 2 --ops 'student backbone'
"""

import argparse
import os.path as osp
import types

import torch

from mmssl_dev.reference_dinov2 import (
    init_single_process_group,
    load_reference,
)
from mmssl_dev.speed_vs_reference import (
    CONFIG_MODE,
    recipe_config,
    step_fns,
)
from mmssl_dev.step_phases import (
    KernelCounter,
    label_mmssl,
    label_reference,
    wrapper_label,
)

#: The repository's configs/ (the mmssl side runs its DINOv2 recipe).
CONFIGS = osp.abspath(osp.join(osp.dirname(__file__), '..', 'configs'))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reference-root', required=True)
    parser.add_argument('--batch', type=int, default=2)
    parser.add_argument('--arch', choices=['small', 'large'], default='small')
    parser.add_argument(
        '--variants',
        nargs='+',
        default=['plain', 'packed'],
        choices=['plain', 'packed'],
        help='mmssl rows (packed: what a config gives on a GPU)',
    )
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--ops',
        nargs='*',
        default=[],
        metavar='PHASE',
        help='also list the ops of these phases, most frequent first',
    )
    return parser.parse_args(argv)


def count(fn, labels) -> KernelCounter:
    """Kernels of one call of ``fn`` (after two warm-up calls), its
    methods labelled by ``labels(label)``."""
    counter = KernelCounter()
    labels(wrapper_label(counter.phase))
    fn()
    fn()
    with counter:
        fn()
    return counter


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    from mmengine.logging import MMLogger

    MMLogger.get_instance('mmengine').setLevel('WARNING')
    ref = load_reference(args.reference_root)
    init_single_process_group('cpu')
    opts = types.SimpleNamespace(
        batch=args.batch,
        seed=args.seed,
        device='cpu',
        step_drop_path=None,
        with_cp='none',
        arch=args.arch,
        compile_backend=None,
        variants=args.variants,
        drop_path_mode=[CONFIG_MODE],
        amp=False,
    )
    fns, _ = step_fns(ref, opts, recipe_config(args.arch, CONFIGS))
    counters = {}
    for name, fn in fns.items():
        if name == 'reference':
            counters[name] = count(fn, lambda lb: label_reference(fn, lb))
        else:
            counters[name] = count(
                fn, lambda lb: label_mmssl(fn.model, fn.wrapper, lb)
            )
    names = list(counters)
    totals = {n: c.totals() for n, c in counters.items()}
    phases = sorted({p for t in totals.values() for p in t})
    print(
        f'kernels of one DINOv2 step, ViT-{args.arch[0].upper()}/14, batch '
        f'{args.batch} (2x224 + 8x98 crops), CPU count'
    )
    print(f'{"phase":>28} ' + ' '.join(f'{n:>14}' for n in names))
    for phase in phases + ['total']:
        row = [
            sum(t.values()) if phase == 'total' else t.get(phase, 0)
            for t in totals.values()
        ]
        print(f'{phase:>28} ' + ' '.join(f'{v:>14}' for v in row))
    for phase in args.ops:
        for name in names:
            ops = counters[name].counts.get(phase, {})
            top = ', '.join(f'{k} {v}' for k, v in ops.most_common(12))
            print(f'{phase} / {name}: {top or "none"}')


if __name__ == '__main__':
    main()
