# Copyright (c) mmssl contributors. All rights reserved.
"""Measure a config's training speed and memory over a few iterations.

Runs the config's own model, data pipeline, optimizer wrapper and hooks for
``--warmup + --iters`` iterations (checkpointing and evaluation off, a
temporary work dir) and prints, over the warm iterations: images/s (all
ranks), seconds per iteration (median, min, max), the share of the time
spent waiting for data, the peak CPU resident memory and, on CUDA, the peak
allocated GPU memory; for DINO-family configs also the model FLOPs per
image (:func:`mmssl.engine.flops.dino_step_flops`) and the model-FLOPs
utilisation (MFU) against ``--peak-tflops`` (by default the datasheet
peak of an H100, H200 or A100: bf16 with ``--amp``, else TF32). The
speed figures also appear in the training log line through
:class:`~mmssl.engine.hooks.TrainSpeedHook`.

On CPU, torch uses ``cores / processes`` threads unless ``--threads`` or
``OMP_NUM_THREADS`` says otherwise (several processes with all threads each
run many times slower on a busy machine).

Examples::

    python tools/analysis_tools/benchmark_train.py \\
        configs/dinov2/dinov2_vit-tiny-p4_1xb64-10e_demo.py --iters 5 --amp
    python tools/analysis_tools/benchmark_train.py CONFIG --compile
    CUDA_VISIBLE_DEVICES=-1 torchrun --nproc_per_node 2 \\
        tools/analysis_tools/benchmark_train.py CONFIG --fsdp

``--compile`` compiles each backbone block (``compile_blocks``; other
backbones: mmengine's whole-model ``compile``), on CPU too (inductor needs
a C++ compiler). ``--fsdp`` wraps the model in FSDP2 (``MMFullyShard``,
bf16 parameters with ``--amp``) and must be started by torchrun; on CPU
it runs over gloo.
"""

import argparse
import json
import os
import tempfile

from mmssl.config.cli import add_cfg_options_arguments


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--iters', type=int, default=10)
    parser.add_argument('--warmup', type=int, default=2)
    parser.add_argument('--amp', action='store_true', help='mixed precision')
    parser.add_argument(
        '--compile', action='store_true', help='torch.compile each block'
    )
    parser.add_argument(
        '--compile-backend', default=None, help='torch.compile backend'
    )
    parser.add_argument(
        '--fsdp', action='store_true', help='FSDP2 (run under torchrun)'
    )
    parser.add_argument('--threads', type=int, default=None)
    parser.add_argument('--batch-size', type=int, default=None)
    parser.add_argument('--num-workers', type=int, default=None)
    parser.add_argument('--json', help='also write the figures here')
    parser.add_argument(
        '--peak-tflops',
        type=float,
        default=None,
        help='peak TFLOP/s per GPU for MFU (default: the datasheet bf16 '
        '(with --amp) or TF32 peak of H100/H200/A100, mmssl.engine.flops)',
    )
    add_cfg_options_arguments(parser)
    return parser.parse_args(argv)


def default_threads() -> int:
    """Cores (this process may use) divided by the processes per node."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    procs = int(os.environ.get('LOCAL_WORLD_SIZE', '1'))
    return max(1, cores // procs)


def set_threads(args, cuda: bool) -> str:
    import torch

    if args.threads is not None:
        n = args.threads
    elif 'OMP_NUM_THREADS' in os.environ:
        return f'threads: {torch.get_num_threads()} (OMP_NUM_THREADS)'
    elif cuda:
        return f'threads: {torch.get_num_threads()} (torch default)'
    else:
        n = default_threads()
    torch.set_num_threads(n)
    return f'threads: {n}'


#: Backbones with the ``compile_blocks`` flag.
BLOCK_COMPILED = ('DINOVisionTransformer', 'DINOv3ViT')


def apply_compile(cfg, backend=None) -> str:
    """Compile each backbone block, or the whole model for others."""
    backbone = cfg.model.get('backbone', {})
    compile_cfg = dict(backend=backend) if backend else True
    if backbone.get('type') in BLOCK_COMPILED:
        backbone['compile_blocks'] = compile_cfg
        return f'compile: each {backbone["type"]} block'
    cfg.compile = compile_cfg
    return 'compile: whole model (mmengine)'


def apply_fsdp(cfg, amp: bool) -> str:
    """FSDP2 wrapper; starts the process group torchrun describes."""
    if 'WORLD_SIZE' not in os.environ:
        raise SystemExit('--fsdp: launch with torchrun.')
    from mmssl.engine.runner.distributed import setup_distributed_cfg

    setup_distributed_cfg(cfg, 'pytorch')
    cfg.model_wrapper_cfg = dict(
        type='MMFullyShard', param_dtype='bfloat16' if amp else None
    )
    return f'fsdp: MMFullyShard, param_dtype {"bfloat16" if amp else "fp32"}'


def prepare_cfg(args, cuda: bool):
    from mmssl.config import load_config
    from mmssl.config.rewrite import enable_amp_in_cfg

    notes = []
    cfg = load_config(
        args.config,
        args.cfg_options,
        args.allow_new_keys,
        notes=notes,
        exit_on_error=True,
    )
    if args.amp:
        notes.append(enable_amp_in_cfg(cfg, cuda))
    if args.compile:
        notes.append(apply_compile(cfg, args.compile_backend))
    if args.fsdp:
        notes.append(apply_fsdp(cfg, args.amp))
    loader = cfg.train_dataloader
    if args.batch_size is not None:
        loader.batch_size = args.batch_size
    if args.num_workers is not None:
        loader.num_workers = args.num_workers
        if args.num_workers == 0:
            loader.persistent_workers = False
    cfg.work_dir = tempfile.mkdtemp(prefix='mmssl_bench_')
    cfg.train_cfg = dict(
        type='IterBasedTrainLoop', max_iters=args.warmup + args.iters
    )
    for key in ('val_dataloader', 'val_cfg', 'val_evaluator'):
        cfg[key] = None
    for key in ('test_dataloader', 'test_cfg', 'test_evaluator'):
        cfg[key] = None
    cfg.default_hooks.checkpoint = None
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.custom_hooks = [
        h for h in cfg.get('custom_hooks', []) if 'Eval' not in h['type']
    ] + [dict(type='TrainSpeedHook', warmup=args.warmup)]
    return cfg, notes


def format_summary(s: dict) -> str:
    lines = [
        f'warm iterations: {s["iters"]}',
        f'images/s: {s["img_per_s"]:.2f}',
        f's/iter: {s["s_per_iter"]:.4f} (median; min '
        f'{s["s_per_iter_min"]:.4f}, max {s["s_per_iter_max"]:.4f})',
        f'data-wait share: {100 * s["data_share"]:.1f}%',
        f'peak CPU RSS: {s["peak_rss_mb"]:.0f} MiB',
    ]
    if 'cuda_max_alloc_mb' in s:
        lines.append(f'CUDA max allocated: {s["cuda_max_alloc_mb"]:.0f} MiB')
    if 'gflop_per_img' in s:
        mfu = s.get('mfu')
        lines.append(
            f'model GFLOP/image: {s["gflop_per_img"]:.1f} ({s["crops"]}); '
            + (
                f'MFU: {100 * mfu:.1f}% of {s["peak_tflops"]:g} TFLOP/s '
                f'x {s["gpus"]} GPU(s)'
                if mfu is not None
                else 'MFU: n/a (give --peak-tflops)'
            )
        )
    return '\n'.join(lines)


def add_mfu(summary: dict, cfg, args, cuda: bool, gpus: int) -> None:
    """Model FLOPs per image (mmssl.engine.flops) and MFU, where the config
    is a DINO-family one and a peak is known."""
    import torch

    from mmssl.engine.flops import dino_step_flops, peak_tflops

    try:
        flops = dino_step_flops(cfg)
    except (KeyError, ValueError, TypeError):
        return  # not a multi-crop ViT config
    peak = args.peak_tflops
    if peak is None and cuda:  # 16-bit peak for --amp or an AMP config
        half = args.amp or 'Amp' in str(cfg.optim_wrapper.get('type', ''))
        peak = peak_tflops(torch.cuda.get_device_name(), bf16=half)
    summary.update(gflop_per_img=flops.total / 1e9, crops=flops.crops)
    summary.update(gpus=gpus, peak_tflops=peak, mfu=None)
    if peak:
        achieved = summary['img_per_s'] * flops.total / gpus
        summary['mfu'] = achieved / (peak * 1e12)


def main(argv=None):
    args = parse_args(argv)
    if args.iters < 1 or args.warmup < 0:
        raise SystemExit('--iters must be >= 1 and --warmup >= 0.')
    import torch

    from mmssl.engine.hooks import TrainSpeedHook
    from mmssl.engine.runner import build_runner
    from mmssl.setup_env import register_all_modules

    cuda = torch.cuda.is_available()
    register_all_modules()
    cfg, notes = prepare_cfg(args, cuda)
    notes.append(set_threads(args, cuda))
    runner = build_runner(cfg)
    runner.train()
    hook = next(h for h in runner.hooks if isinstance(h, TrainSpeedHook))
    summary = hook.summary()
    summary.update(
        config=args.config,
        amp=args.amp,
        compile=args.compile,
        fsdp=args.fsdp,
        device='cuda' if cuda else 'cpu',
        threads=torch.get_num_threads(),
        work_dir=cfg.work_dir,
    )
    from mmengine.dist import get_rank, get_world_size

    add_mfu(summary, cfg, args, cuda, get_world_size())
    report(summary, notes, args.json, get_rank())


def report(summary: dict, notes: list, json_path, rank: int) -> None:
    """Print (and write) the summary once per run: on rank 0 only."""
    if rank != 0:
        return
    print('\n'.join(notes))
    print(format_summary(summary), flush=True)
    if json_path:
        with open(json_path, 'w') as f:
            json.dump(summary, f, indent=1)


if __name__ == '__main__':
    main()
