# Copyright (c) mmssl contributors. All rights reserved.
"""Op-level profile of the ViT-S/14 multi-crop forward+backward, mmssl
against the reference DINOv2 backbone, for finding where one side is slower.

It uses the shapes and builders of ``benchmark_vs_reference.py``
(:mod:`mmssl_dev.speed_vs_reference`) and
prints, for each side, the ops with the most self device time (CUDA) or
self CPU time (CPU), after ``--warmup`` untimed passes::

    python .dev_scripts/profile_backbone.py --reference-root /tmp/dinov2ref \\
        --device cuda --batch 32 --amp
"""

import argparse
import contextlib

import torch

from mmssl_dev.reference_dinov2 import load_reference
from mmssl_dev.speed_vs_reference import backbone_fns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--reference-root', required=True)
    parser.add_argument('--device', default='cuda')
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--drop-path', type=float, default=0.4)
    parser.add_argument('--amp', action='store_true', help='bf16 autocast')
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--passes', type=int, default=3)
    parser.add_argument('--rows', type=int, default=15)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)

    ref = load_reference(args.reference_root)
    args.variants, args.compile_backend = ['plain'], None
    fns = backbone_fns(ref, args)  # {'mmssl': ..., 'reference': ...}
    cuda = args.device.startswith('cuda')
    kind = 'cuda' if cuda else 'cpu'
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    sort = 'self_cuda_time_total' if cuda else 'self_cpu_time_total'

    def autocast():
        if not args.amp:
            return contextlib.nullcontext()
        return torch.autocast(kind, dtype=torch.bfloat16)

    for name, fn in fns.items():
        for _ in range(args.warmup):
            with autocast():
                fn()
        if cuda:
            torch.cuda.synchronize()
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(args.passes):
                with autocast():
                    fn()
            if cuda:
                torch.cuda.synchronize()
        precision = 'bf16 autocast' if args.amp else 'fp32'
        print(f'===== {name}, {precision}, {args.passes} passes, {kind}')
        print(prof.key_averages().table(sort_by=sort, row_limit=args.rows))


if __name__ == '__main__':
    main()
