# Copyright (c) mmssl contributors. All rights reserved.
"""Time a multi-crop student step with and without token packing.

Forward + backward of a ViT student on G global and L local crops per
image, once with one ``forward`` per crop size (what ``DINOFamily`` does by
default) and once with one ``forward_packed`` pass (``pack_crops=True``):
token-wise layers run once on the tokens of all crop sizes, attention per
size. The two take turns for ``--repeats`` rounds, the order flipping
every round, after ``--warmup`` untimed rounds; the tool prints the median
and min-max of each and the median of the per-round ratios.

Examples::

    python tools/analysis_tools/benchmark_packing.py            # ViT-S/14
    python tools/analysis_tools/benchmark_packing.py --backbone dinov3
    python tools/analysis_tools/benchmark_packing.py --demo      # demo size
"""

import argparse
import statistics
import time

import torch

from mmssl.models.backbones import (
    DINOv3ViT,
    DINOVisionTransformer,
)

DEMO_ARCH = dict(
    embed_dims=64, num_layers=4, num_heads=4, feedforward_channels=256
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument(
        '--backbone', choices=['dinov2', 'dinov3'], default='dinov2'
    )
    p.add_argument('--arch', default='small')
    p.add_argument('--patch-size', type=int, help='default 14 / 16 (v3)')
    p.add_argument('--batch', type=int, help='default 2 (demo: 64)')
    p.add_argument('--global-size', type=int, default=224)
    p.add_argument('--local-size', type=int, help='default 98 / 96 (v3)')
    p.add_argument('--num-global', type=int, default=2)
    p.add_argument('--num-local', type=int, default=8)
    p.add_argument('--drop-path', type=float, default=0.0)
    p.add_argument(
        '--demo',
        action='store_true',
        help='the demo configs: width-64 ViT with 4 px patches, batch 64, '
        '2 x 32 px + 4 x 16 px crops',
    )
    p.add_argument('--repeats', type=int, default=6)
    p.add_argument('--warmup', type=int, default=1)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--device', default='cpu', help='e.g. cuda')
    args = p.parse_args(argv)
    v3 = args.backbone == 'dinov3'
    if args.demo:
        args.arch, args.patch_size = DEMO_ARCH, 4
        args.batch = args.batch or 64
        args.global_size, args.local_size, args.num_local = 32, 16, 4
    args.batch = args.batch or 2
    args.patch_size = args.patch_size or (16 if v3 else 14)
    args.local_size = args.local_size or (96 if v3 else 98)
    return args


def build(args) -> torch.nn.Module:
    common = dict(
        arch=args.arch,
        patch_size=args.patch_size,
        drop_path_rate=args.drop_path,
        out_type='raw',
    )
    if args.backbone == 'dinov3':
        return DINOv3ViT(num_register_tokens=4, **common)
    return DINOVisionTransformer(img_size=args.global_size, **common)


def crops(args):
    """One tensor per crop size, as ``split_views`` groups them."""
    b = args.batch
    return [
        torch.randn(
            args.num_global * b, 3, args.global_size, args.global_size
        ),
        torch.randn(args.num_local * b, 3, args.local_size, args.local_size),
    ]


def step(model, xs, packed: bool) -> float:
    """Seconds of one forward + backward."""
    model.zero_grad(set_to_none=True)
    sync = torch.cuda.synchronize if xs[0].is_cuda else (lambda: None)
    sync()
    start = time.perf_counter()
    outs = model.forward_packed(xs) if packed else [model(x) for x in xs]
    loss = sum(o[-1].float().square().mean() for o in outs)
    loss.backward()
    sync()
    return time.perf_counter() - start


def max_difference(model, xs) -> float:
    """Largest |packed - per-size| output in evaluation mode."""
    model.eval()
    with torch.no_grad():
        packed = model.forward_packed(xs)
        plain = [model(x) for x in xs]
    model.train()
    return max(
        (a[-1] - b[-1]).abs().max().item() for a, b in zip(packed, plain)
    )


def spread(values) -> str:
    return (
        f'{statistics.median(values):.4f} s '
        f'(min {min(values):.4f}, max {max(values):.4f})'
    )


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build(args).to(args.device).train()
    xs = [x.to(args.device) for x in crops(args)]
    print(
        f'{args.backbone} arch={args.arch} patch {args.patch_size}; batch '
        f'{args.batch}: {args.num_global} x {args.global_size} px + '
        f'{args.num_local} x {args.local_size} px crops; drop path '
        f'{args.drop_path}; threads {torch.get_num_threads()}; '
        f'{args.device}'
    )
    print(f'max |packed - per-size| (eval): {max_difference(model, xs):.2e}')
    for _ in range(args.warmup):
        step(model, xs, False), step(model, xs, True)
    times = {False: [], True: []}
    for r in range(args.repeats):
        for packed in (False, True) if r % 2 == 0 else (True, False):
            times[packed].append(step(model, xs, packed))
    ratios = [a / b for a, b in zip(times[False], times[True])]
    print(f'per-size fwd+bwd: {spread(times[False])}')
    print(f'packed   fwd+bwd: {spread(times[True])}')
    print(
        f'speed-up (per-size / packed), median of {args.repeats} '
        f'interleaved rounds: {statistics.median(ratios):.3f} '
        f'(min {min(ratios):.3f}, max {max(ratios):.3f})'
    )
    return times


if __name__ == '__main__':
    main()
