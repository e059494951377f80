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
The ``plain`` row is the eager per-size model. ``--drop-path-mode``
repeats every row for each listed stochastic-depth mode of mmssl
(``bernoulli``, ``fixed``: DINOv2's count, ``fixed_stochastic``), named
``mmssl[fixed]`` etc.; the reference keeps its own rule. Compiled variants need
``--warmup`` of at least 2 (the first calls compile, then recompile with
a dynamic batch size).

Example::

    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 10
    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 6 --warmup 3 \\
        --variants plain compile packed compile+packed --clock cpu
    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --repeats 8 --clock cpu \\
        --drop-path-mode bernoulli fixed fixed_stochastic
    python tools/analysis_tools/benchmark_vs_reference.py \\
        --reference-root /tmp/dinov2ref --device cuda --batch 32 --amp
"""

import argparse
import os
import os.path as osp
import statistics
import time

import torch

from mmssl.analysis.reference_dinov2 import (
    ReferenceStep,
    init_single_process_group,
    load_reference,
    reference_vit,
)
from mmssl.models.utils.drop_path import DROP_PATH_MODES

ROOT = osp.abspath(osp.join(osp.dirname(__file__), '..', '..'))
CONFIG = osp.join(ROOT, 'configs/dinov2/dinov2_vit-{}14_8xb128-100e_in1k.py')
VARIANTS = ('plain', 'compile', 'packed', 'compile+packed')


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
        default=['bernoulli'],
        choices=DROP_PATH_MODES,
        help='mmssl stochastic-depth modes; every row once per mode',
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


def make_crops(batch, seed, device='cpu'):
    """Crops (global list, local list) and iBOT masks (2B, 256)."""
    gen = torch.Generator().manual_seed(seed)
    glob = [torch.randn(batch, 3, 224, 224, generator=gen) for _ in range(2)]
    loc = [torch.randn(batch, 3, 98, 98, generator=gen) for _ in range(8)]
    masks = torch.rand(2 * batch, 16 * 16, generator=gen) < 0.3
    masks[1::2] = False  # iBOT masks half of the crops
    glob = [x.to(device) for x in glob]
    loc = [x.to(device) for x in loc]
    return glob, loc, masks.to(device)


def with_cp(args):
    """``with_cp`` of mmssl's backbone."""
    mode = getattr(args, 'with_cp', 'none')
    return False if mode == 'none' else mode


def arch_of(args):
    """``'small'`` or ``'large'`` (tools/dev/profile_*.py: small)."""
    return getattr(args, 'arch', 'small')


def compile_cfg(variant, backend):
    """``compile_blocks`` value of a variant."""
    if 'compile' not in variant:
        return False
    return dict(backend=backend) if backend else True


def name_of(variant, mode='bernoulli'):
    name = 'mmssl' if variant == 'plain' else f'mmssl+{variant}'
    return name if mode == 'bernoulli' else f'{name}[{mode}]'


def rows(args):
    """(variant, drop-path mode) of every mmssl row."""
    return [(v, m) for m in args.drop_path_mode for v in args.variants]


# ---------------------------------------------------------------- backbone
def backbone_fns(ref, args):
    """name -> callable: one per mmssl variant, then the reference."""
    from mmssl.models.backbones import DINOVisionTransformer

    glob, loc, _ = make_crops(args.batch, args.seed, args.device)
    g, local = torch.cat(glob), torch.cat(loc)
    fns = {}
    for variant, mode in rows(args):
        torch.manual_seed(args.seed)
        ours = DINOVisionTransformer(
            arch=arch_of(args),
            with_cp=with_cp(args),
            img_size=224,
            drop_path_rate=args.drop_path,
            drop_path_mode=mode,
            out_type='raw',
            compile_blocks=compile_cfg(variant, args.compile_backend),
        )
        ours.init_weights()
        ours.train().to(args.device)
        fns[name_of(variant, mode)] = mmssl_backbone_fn(
            ours, (g, local), 'packed' in variant
        )
    theirs = reference_vit(ref, args.drop_path, arch_of(args))
    theirs = theirs.train().to(args.device)

    def run_theirs():
        loss = sum(
            theirs.forward_features(x)['x_prenorm'].mean() for x in (g, local)
        )
        loss.backward()

    fns['reference'] = run_theirs
    return fns


def mmssl_backbone_fn(model, xs, packed):
    def run():
        if packed:
            outs = [o[0] for o in model.forward_packed(list(xs))]
        else:
            outs = [model(x)[0] for x in xs]
        sum(o.mean() for o in outs).backward()

    return run


# -------------------------------------------------------------------- step
def build_mmssl_step(args, variant='plain', mode='bernoulli'):
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper
    from mmpretrain.structures import DataSample

    from mmssl.registry import MODELS
    from mmssl.utils import register_all_modules

    register_all_modules()
    cfg = Config.fromfile(CONFIG.format(arch_of(args)[0]))
    cfg.model.backbone.with_cp = with_cp(args)
    if args.step_drop_path is not None:
        cfg.model.backbone.drop_path_rate = args.step_drop_path
    cfg.model.backbone.drop_path_mode = mode
    cfg.model.backbone.compile_blocks = compile_cfg(
        variant, args.compile_backend
    )
    cfg.model.pack_crops = 'packed' in variant
    torch.manual_seed(args.seed)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train().to(args.device)
    model.teacher_temp = 0.07
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    wrapper.log_interval = 10**9  # no log reading, as the reference side
    glob, loc, masks = make_crops(args.batch, args.seed, args.device)
    per_image = masks.view(2, args.batch, 16, 16).transpose(0, 1)
    # the masked-patch buffer holds exactly the masked patches (as the
    # reference side's index): equal work, static shapes
    bound = int(masks.sum())
    samples = []
    for b in range(args.batch):
        sample = DataSample(metainfo=dict(num_masked_max=bound))
        sample.set_field(per_image[b], 'mask', field_type='data')
        samples.append(sample)
    inputs = glob + loc

    def run():
        losses = model.loss(inputs, samples)
        loss, _ = model.parse_losses(losses)
        wrapper.update_params(loss)
        model.update_teacher(0.992)

    run.model, run.wrapper = model, wrapper  # for tools/dev/profile_step.py
    return run, cfg.model.backbone.drop_path_rate


def step_fns(ref, args):
    fns = {}
    for variant, mode in rows(args):
        fns[name_of(variant, mode)], drop_path = build_mmssl_step(
            args, variant, mode
        )
    crops = make_crops(args.batch, args.seed, args.device)
    fns['reference'] = ReferenceStep(
        ref, crops, drop_path, args.device, arch_of(args)
    )
    return fns, drop_path


# ------------------------------------------------------------------ timing
def interleave(fns, repeats, warmup, device='cpu', amp=False, clock='wall'):
    """Time ``fns`` (name -> callable) in turns; the order reverses every
    repeat.

    On CUDA the device is synchronised before and after each call, so a
    time is the whole call's device work; ``amp`` runs each call under
    bf16 autocast. ``clock='cpu'`` measures the process's CPU time
    (``time.process_time``) instead of elapsed time."""
    import contextlib

    cuda = str(device).startswith('cuda')
    if cuda and clock == 'cpu':
        raise ValueError('--clock cpu is for CPU runs; use --clock wall.')
    now = time.process_time if clock == 'cpu' else time.perf_counter
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    kind = 'cuda' if cuda else 'cpu'
    fns = dict(fns)
    names = list(fns)
    times = {n: [] for n in names}
    peaks = {n: 0 for n in names}  # bytes above what was allocated before
    overall = 0  # all sides together, models and optimiser states included
    for i in range(warmup + repeats):
        order = list(names if i % 2 == 0 else names[::-1])
        for name in order:
            ctx = (
                torch.autocast(kind, dtype=torch.bfloat16)
                if amp
                else contextlib.nullcontext()
            )
            sync()
            if cuda:
                before = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
            start = now()
            try:
                with ctx:
                    fns[name]()
                sync()
            except OOM:  # the other sides go on
                print(f'{name}: out of memory', flush=True)
                fns.pop(name)
                names.remove(name)
                torch.cuda.empty_cache()
                continue
            if i >= warmup:
                times[name].append(now() - start)
            if cuda:
                top = torch.cuda.max_memory_allocated()
                peaks[name] = max(peaks[name], top - before)
                overall = max(overall, top)
        if i >= warmup and names:  # partial results survive a stop
            print(
                f'repeat {i - warmup + 1}: '
                + ', '.join(f'{n} {times[n][-1]:.3f} s' for n in names),
                flush=True,
            )
    times = {n: ts for n, ts in times.items() if ts}  # out of memory: none
    if cuda:
        print(
            'peak CUDA memory during a call, above what was allocated '
            'before it (activations, gradients, temporaries): '
            + ', '.join(f'{n} {peaks[n] / 2**30:.2f} GiB' for n in times)
            + f'; peak of all sides together {overall / 2**30:.2f} GiB',
            flush=True,
        )
    return times


OOM = getattr(torch, 'OutOfMemoryError', torch.cuda.OutOfMemoryError)


def report(title, times, flops=0.0, peak=None):
    """Medians of every side and, per mmssl row, the ratio reference /
    mmssl (median of per-repeat ratios and their range)."""
    theirs = times.get('reference', [])
    lines = [f'== {title} ({len(theirs)} repeats)']
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else ts * 3
        lines.append(
            f'{name:>20}: median {statistics.median(ts):.3f} s '
            f'(IQR {q[0]:.3f}-{q[2]:.3f}, min {min(ts):.3f})'
        )
    for name, ours in times.items():
        if name == 'reference' or not theirs:
            continue
        pair = [t / o for o, t in zip(ours, theirs)]
        lines.append(
            f'     ratio: reference/{name} = '
            f'{statistics.median(theirs) / statistics.median(ours):.3f} '
            f'(median of per-repeat ratios {statistics.median(pair):.3f}, '
            f'range {min(pair):.3f}-{max(pair):.3f})'
        )
    if flops:  # model FLOPs of one call (mmssl.apis.flops)
        for name, ts in times.items():
            tflops = flops / statistics.median(ts) / 1e12
            mfu = f', MFU {100 * tflops / peak:.1f}%' if peak else ''
            lines.append(f'{name:>20}: {tflops:.3g} TFLOP/s{mfu}')
    print('\n'.join(lines), flush=True)


def step_flops(args) -> float:
    """Model FLOPs of one step of ``--batch`` images, 2x224 + 8x98 crops
    (:func:`mmssl.apis.flops.dino_step_flops`; iBOT rows at the collate's
    bound, about this benchmark's count)."""
    from mmengine.config import Config

    from mmssl.apis.flops import dino_step_flops

    cfg = Config.fromfile(CONFIG.format(arch_of(args)[0]))
    cfg.train_dataloader.batch_size = args.batch
    for t in cfg.train_dataloader.dataset.pipeline:
        if t['type'] == 'MultiCrop':
            t.update(global_size=224, local_size=98, num_local_crops=8)
    return dino_step_flops(cfg).total * args.batch


def default_peak(args):
    """Datasheet peak TFLOP/s of the GPU (bf16 with --amp, else TF32)."""
    if not args.device.startswith('cuda'):
        return None
    from mmssl.apis.flops import peak_tflops

    return peak_tflops(torch.cuda.get_device_name(args.device), args.amp)


def load_average():
    try:
        return ' '.join(f'{x:.2f}' for x in os.getloadavg())
    except OSError:
        return 'unknown'


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
        fns, drop_path = step_fns(ref, args)
        times = interleave(fns, **timing)
        report(
            f'whole DINOv2 step, drop_path_rate={drop_path}',
            times,
            step_flops(args),
            args.peak_tflops or default_peak(args),
        )
    print(f'load average at the end {load_average()}')


if __name__ == '__main__':
    main()
