# Copyright (c) mmssl contributors. All rights reserved.
"""Where a whole DINOv2 step spends its time, mmssl against the reference.

Runs the two steps of ``benchmark_vs_reference.py --what step`` (same
crops, same config) under ``torch.profiler`` and prints, per side, the
self CPU time of labelled phases (teacher / student backbone forward,
heads, Sinkhorn-Knopp, DINO / iBOT / KoLeo losses, gradient clipping,
optimizer, EMA), the backward pass, and the ops with the most self CPU
time. Times are summed over ``--passes`` steps after ``--warmup`` ones::

    OMP_NUM_THREADS=1 python .dev_scripts/profile_step.py \\
        --reference-root /tmp/dinov2ref --passes 2
"""

import argparse
import collections
import os.path as osp

import torch
from torch.profiler import record_function

from mmssl_dev.reference_dinov2 import (
    init_single_process_group,
    load_reference,
)
from mmssl_dev.speed_vs_reference import recipe_config, step_fns
from mmssl_dev.step_phases import (
    label_mmssl,
    label_reference,
    wrapper_label,
)

#: The repository's configs/ (the mmssl side runs its DINOv2 recipe).
CONFIGS = osp.abspath(osp.join(osp.dirname(__file__), '..', 'configs'))


#: ``obj.attr`` wrapped in ``record_function(name)``.
label = wrapper_label(record_function)


def phases(prof):
    """name -> self CPU time (s) of the labelled phases, the optimizer,
    backward (autograd engine) and everything else."""
    out = collections.Counter()
    for evt in prof.key_averages():
        t = evt.cpu_time_total / 1e6  # inclusive, for labels
        if evt.key.startswith('Optimizer.step'):
            out['optimizer step'] += t
        elif evt.key.startswith('Optimizer.zero_grad'):
            out['zero grad'] += t
        elif evt.key in LABELS:
            out[evt.key] += t
    return out


LABELS = {
    'whole step',
    'backward pass',
    'teacher backbone',
    'student backbone',
    'teacher head',
    'student head',
    'sinkhorn-knopp',
    'dino loss',
    'dino loss (incl. sinkhorn)',
    'ibot loss',
    'ibot loss (incl. sinkhorn)',
    'koleo loss',
    'clip grad',
    'ema',
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--reference-root', required=True)
    parser.add_argument('--batch', type=int, default=2)
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--passes', type=int, default=2)
    parser.add_argument('--rows', type=int, default=25)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--drop-path-mode', default='bernoulli')
    parser.add_argument('--step-drop-path', type=float, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from mmengine.logging import MMLogger

    MMLogger.get_instance('mmengine').setLevel('WARNING')
    ref = load_reference(args.reference_root)
    init_single_process_group('cpu')
    args.device, args.compile_backend = 'cpu', None
    args.variants, args.drop_path_mode = ['plain'], [args.drop_path_mode]
    fns, _ = step_fns(ref, args, recipe_config('small', CONFIGS))
    mine, theirs = [fns[n] for n in fns]
    label_mmssl(mine.model, mine.wrapper, label)
    label_reference(theirs, label)
    label(torch.Tensor, 'backward', 'backward pass')
    results, per_op = {}, {}
    for name, fn in (('mmssl', mine), ('reference', theirs)):
        for _ in range(args.warmup):
            fn()
        with torch.profiler.profile(record_shapes=True) as prof:
            for _ in range(args.passes):
                with record_function('whole step'):
                    fn()
        results[name] = phases(prof)
        per_op[name] = collections.Counter()
        for evt in prof.key_averages():
            per_op[name][evt.key] += evt.self_cpu_time_total / 1e6
        print(f'== {name}: top ops by self CPU time, {args.passes} steps')
        print(
            prof.key_averages(group_by_input_shape=True).table(
                sort_by='self_cpu_time_total', row_limit=args.rows
            ),
            flush=True,
        )
    print(f'== phases, seconds of CPU time over {args.passes} steps')
    print(f'{"phase":>28} {"mmssl":>8} {"reference":>10}')
    keys = sorted(set(results['mmssl']) | set(results['reference']))
    for key in keys:
        a, b = results['mmssl'][key], results['reference'][key]
        print(f'{key:>28} {a:8.3f} {b:10.3f}')
    print('== ops by name, self CPU time (s), largest differences first')
    mine_ops, ref_ops = per_op['mmssl'], per_op['reference']
    names = set(mine_ops) | set(ref_ops)
    diffs = sorted(names, key=lambda n: -abs(mine_ops[n] - ref_ops[n]))
    for n in diffs[: args.rows]:
        a, b = mine_ops[n], ref_ops[n]
        print(f'{n[:50]:>50} {a:8.3f} {b:10.3f} {a - b:+8.3f}')


if __name__ == '__main__':
    main()
