# Copyright (c) mmssl contributors. All rights reserved.
"""Measure a DINOVisionTransformer's training step cost on one device.

Runs forward + backward of a multi-crop student step (global crops at
``--global-size`` and local crops at ``--local-size``) and reports the
throughput and peak memory, with and without activation checkpointing, so
users can see the cost of a config before they queue it.

Example::

    python tools/analysis_tools/benchmark_vit_backbone.py --arch large \\
        --batch 32 --amp bf16
"""

import argparse
import time

import torch

from mmssl.models.backbones import DINOVisionTransformer


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--arch', default='small')
    parser.add_argument('--patch-size', type=int, default=14)
    parser.add_argument('--registers', type=int, default=0)
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--global-size', type=int, default=224)
    parser.add_argument('--local-size', type=int, default=98)
    parser.add_argument('--num-global', type=int, default=2)
    parser.add_argument('--num-local', type=int, default=8)
    parser.add_argument(
        '--amp', choices=['none', 'fp16', 'bf16'], default='bf16'
    )
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument(
        '--with-cp', choices=['both', 'on', 'off'], default='both'
    )
    parser.add_argument('--device', default='cuda')
    return parser.parse_args(argv)


def bench(args, with_cp):
    device = torch.device(args.device)
    model = (
        DINOVisionTransformer(
            arch=args.arch,
            patch_size=args.patch_size,
            img_size=args.global_size,
            num_register_tokens=args.registers,
            with_cp=with_cp,
            drop_path_rate=0.1,
            out_type='raw',
        )
        .to(device)
        .train()
    )
    dtype = dict(none=None, fp16=torch.float16, bf16=torch.bfloat16)[args.amp]
    crops = [
        (args.num_global, args.global_size),
        (args.num_local, args.local_size),
    ]
    inputs = [
        torch.randn(n * args.batch, 3, s, s, device=device)
        for n, s in crops
        if n > 0
    ]
    if device.type == 'cuda':
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for step in range(args.steps + 1):
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        with torch.autocast(
            device.type,
            dtype=dtype or torch.float32,
            enabled=dtype is not None,
        ):
            loss = sum(model(x)[0].float().pow(2).mean() for x in inputs)
        loss.backward()
        model.zero_grad(set_to_none=True)
        if device.type == 'cuda':
            torch.cuda.synchronize(device)
        if step > 0:  # first step is warm-up
            times.append(time.perf_counter() - start)
    peak = (
        torch.cuda.max_memory_allocated(device) / 2**30
        if device.type == 'cuda'
        else float('nan')
    )
    step_s = sum(times) / len(times)
    return step_s, peak


def main(argv=None):
    args = parse_args(argv)
    modes = dict(both=[False, True], on=[True], off=[False])[args.with_cp]
    print(
        f'arch={args.arch}/{args.patch_size} registers={args.registers} '
        f'batch={args.batch} crops={args.num_global}x{args.global_size}+'
        f'{args.num_local}x{args.local_size} amp={args.amp}'
    )
    for with_cp in modes:
        step_s, peak = bench(args, with_cp)
        print(
            f'  with_cp={with_cp!s:5}  {step_s * 1000:8.1f} ms/step  '
            f'{args.batch / step_s:8.1f} img/s  peak {peak:6.2f} GiB'
        )


if __name__ == '__main__':
    main()
