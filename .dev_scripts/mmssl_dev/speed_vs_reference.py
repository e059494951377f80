# Copyright (c) mmssl contributors. All rights reserved.
"""The mmssl side of the speed comparisons against the reference DINOv2
code, and their interleaved timing (``.dev_scripts/
benchmark_vs_reference.py``, ``.dev_scripts/profile_backbone.py``,
``.dev_scripts/profile_step.py``).

Builders take the tool's parsed arguments (``batch``, ``seed``,
``device``, ``drop_path``, ``step_drop_path``, ``variants``,
``drop_path_mode``, ``compile_backend``, optionally ``arch`` and
``with_cp``) and, for the whole step, the path of the mmssl config
(:func:`recipe_config`); the reference side comes from
:mod:`mmssl_dev.reference_dinov2`.
"""

import contextlib
import os
import os.path as osp
import statistics
import time

import torch

from mmssl_dev.reference_dinov2 import ReferenceStep, reference_vit

#: mmssl rows of the comparison (``--variants``).
VARIANTS = (
    'plain',
    'compile',
    'packed',
    'compile+packed',
)
#: The stochastic-depth mode of the DINO-family configs: rows in this mode
#: carry no ``[mode]`` suffix.
CONFIG_MODE = 'static'
#: The DINOv2 recipe of each architecture, under ``configs/``.
RECIPE = osp.join('dinov2', 'dinov2_vit-{}14_8xb128-100e_in1k.py')
OOM = getattr(torch, 'OutOfMemoryError', torch.cuda.OutOfMemoryError)


def recipe_config(arch, configs_dir):
    """Path of the mmssl DINOv2 config of ``arch`` (``'small'`` or
    ``'large'``) under ``configs_dir`` (the repository's ``configs/``).

    Raises:
        FileNotFoundError: When ``configs_dir`` has no such config.
    """
    path = osp.join(configs_dir, RECIPE.format(arch[0]))
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'no DINOv2 config for ViT-{arch[0].upper()}/14 at {path}; '
            'pass the configs/ folder of an mmssl checkout'
        )
    return path


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
    """``'small'`` or ``'large'`` (.dev_scripts/profile_*.py: small)."""
    return getattr(args, 'arch', 'small')


def compile_cfg(variant, backend):
    """``compile_blocks`` value of a variant."""
    if 'compile' not in variant:
        return False
    return dict(backend=backend) if backend else True


def name_of(variant, mode=CONFIG_MODE):
    name = 'mmssl' if variant == 'plain' else f'mmssl+{variant}'
    return name if mode == CONFIG_MODE else f'{name}[{mode}]'


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
def build_mmssl_step(args, config, variant='plain', mode=CONFIG_MODE):
    """A callable running one mmssl DINOv2 step of the config ``config``
    (:func:`recipe_config`) on :func:`make_crops`, and the drop-path
    rate it uses."""
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper
    from mmpretrain.structures import DataSample

    from mmssl.registry import MODELS
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    cfg = Config.fromfile(config)
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

    run.model, run.wrapper = model, wrapper  # for .dev_scripts/profile_step.py
    return run, cfg.model.backbone.drop_path_rate


def step_fns(ref, args, config):
    """name -> step callable: one per mmssl row, then the reference; and
    the drop-path rate of the steps."""
    fns = {}
    for variant, mode in rows(args):
        fns[name_of(variant, mode)], drop_path = build_mmssl_step(
            args, config, variant, mode
        )
    crops = make_crops(args.batch, args.seed, args.device)
    fns['reference'] = ReferenceStep(
        ref, crops, drop_path, args.device, arch_of(args)
    )
    return fns, drop_path


def step_flops(args, config) -> float:
    """Model FLOPs of one step of ``--batch`` images, 2x224 + 8x98 crops
    (:func:`mmssl.engine.flops.dino_step_flops`; iBOT rows at the collate's
    bound, about this benchmark's count)."""
    from mmengine.config import Config

    from mmssl.engine.flops import dino_step_flops

    cfg = Config.fromfile(config)
    cfg.train_dataloader.batch_size = args.batch
    for t in cfg.train_dataloader.dataset.pipeline:
        if t['type'] == 'MultiCrop':
            t.update(global_size=224, local_size=98, num_local_crops=8)
    return dino_step_flops(cfg).total * args.batch


def default_peak(args):
    """Datasheet peak TFLOP/s of the GPU (bf16 with --amp, else TF32)."""
    if not args.device.startswith('cuda'):
        return None
    from mmssl.engine.flops import peak_tflops

    return peak_tflops(torch.cuda.get_device_name(args.device), args.amp)


# ------------------------------------------------------------------ timing


def interleave(fns, repeats, warmup, device='cpu', amp=False, clock='wall'):
    """Time ``fns`` (name -> callable) in turns; the order reverses every
    repeat.

    On CUDA the device is synchronised before and after each call, so a
    time is the whole call's device work; ``amp`` runs each call under
    bf16 autocast. ``clock='cpu'`` measures the process's CPU time
    (``time.process_time``) instead of elapsed time."""
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
    if flops:  # model FLOPs of one call (mmssl.engine.flops)
        for name, ts in times.items():
            tflops = flops / statistics.median(ts) / 1e12
            mfu = f', MFU {100 * tflops / peak:.1f}%' if peak else ''
            lines.append(f'{name:>20}: {tflops:.3g} TFLOP/s{mfu}')
    print('\n'.join(lines), flush=True)


def load_average():
    try:
        return ' '.join(f'{x:.2f}' for x in os.getloadavg())
    except OSError:
        return 'unknown'
