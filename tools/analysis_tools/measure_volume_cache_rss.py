# Copyright (c) mmssl contributors. All rights reserved.
"""Peak host memory of 2 (or N) CPU ranks reading volumes, per cache mode.

Writes ``--num-volumes`` synthetic float32 ``.npy`` volumes of
``--side``^3 voxels, then for each mode starts ``--world-size`` gloo ranks
(forked from this process) that each read their DistributedSampler share
of a :class:`VolumeFolderDataset` for ``--epochs`` epochs (LoadVolume +
MultiCrop3D, no DataLoader workers) and report their peak RSS (VmHWM),
their RSS before the first read, and the bytes their memory cache holds.

Modes: ``none`` (no cache), ``memory`` (sharded: rank r keeps indices
``i % N == r``), ``memory-unsharded`` (every rank caches what it reads:
the per-rank full copy of MONAI's CacheDataset under DDP), ``disk``
(shared ``.npy`` cache).

Example (the figures in docs/en/3d.md)::

    python tools/analysis_tools/measure_volume_cache_rss.py
"""

import argparse
import json
import multiprocessing as mp
import os
import os.path as osp
import tempfile
from datetime import timedelta
from typing import List, Optional

MODES = ('none', 'memory', 'memory-unsharded', 'disk')


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--num-volumes', type=int, default=16)
    p.add_argument('--side', type=int, default=128)
    p.add_argument('--epochs', type=int, default=4)
    p.add_argument('--world-size', type=int, default=2)
    p.add_argument('--modes', default=','.join(MODES))
    p.add_argument('--work-dir', default=None, help='default: a temp dir')
    p.add_argument('--timeout', type=float, default=600)
    return p.parse_args(argv)


def _status_kb(field: str) -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


def _dataset(mode: str, root: str, cache_dir: str):
    from mmssl.datasets import VolumeFolderDataset

    cache = dict(
        none=dict(),
        memory=dict(cache='memory'),
        disk=dict(cache='disk', cache_dir=cache_dir),
    )
    cache['memory-unsharded'] = dict(cache='memory', cache_shard=False)
    return VolumeFolderDataset(
        root,
        preprocess=[dict(type='LoadVolume')],
        pipeline=[
            dict(
                type='MultiCrop3D',
                global_size=32,
                local_size=16,
                num_global=2,
                num_local=2,
            )
        ],
        **cache[mode],
    )


def _rank(rank: int, args: dict, mode: str, out_file: str) -> None:
    import torch
    import torch.distributed as dist
    from mmengine.dataset import DefaultSampler

    torch.set_num_threads(1)
    dist.init_process_group(
        'gloo',
        init_method=args['init'] + mode,
        rank=rank,
        world_size=args['world_size'],
        timeout=timedelta(seconds=300),
    )
    ds = _dataset(mode, args['root'], args['cache_dir'] + mode)
    sampler = DefaultSampler(ds, shuffle=True, seed=0)
    before = _status_kb('VmRSS')
    for epoch in range(args['epochs']):
        sampler.set_epoch(epoch)
        for i in sampler:
            ds[i]
    dist.barrier()
    cached = ds.cache.nbytes if hasattr(ds.cache, 'nbytes') else 0
    result = dict(
        rank=rank,
        before_kb=before,
        peak_kb=_status_kb('VmHWM'),
        cached_bytes=cached,
    )
    with open(f'{out_file}.{rank}', 'w') as f:
        json.dump(result, f)
    dist.destroy_process_group()


def make_volumes(root: str, n: int, side: int) -> int:
    """Write ``n`` random float32 ``side``^3 volumes; return their bytes."""
    import numpy as np

    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        vol = rng.standard_normal((side, side, side), dtype=np.float32)
        np.save(osp.join(root, f'vol_{i:04d}.npy'), vol)
    return n * side**3 * 4


def measure(mode: str, args: dict, timeout: float) -> List[dict]:
    """Run the ranks of one mode; their results, rank by rank."""
    ctx = mp.get_context('fork')  # torch and mmssl are imported once
    out = osp.join(args['work'], f'rss_{mode}')
    procs = [
        ctx.Process(target=_rank, args=(r, args, mode, out))
        for r in range(args['world_size'])
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    for p in procs:
        if p.exitcode is None:
            p.kill()
            p.join()
    if any(p.exitcode != 0 for p in procs):
        raise RuntimeError(f'mode {mode}: a rank failed ({out}.*)')
    results = []
    for r in range(args['world_size']):
        with open(f'{out}.{r}') as f:
            results.append(json.load(f))
    return results


def main(argv: Optional[List[str]] = None) -> dict:
    a = parse_args(argv)
    # import once, before forking the ranks
    import monai.data  # noqa: F401
    import monai.transforms  # noqa: F401

    import mmssl.datasets  # noqa: F401
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    work = a.work_dir or tempfile.mkdtemp(prefix='rss3d_')
    root = osp.join(work, 'volumes')
    total = make_volumes(root, a.num_volumes, a.side)
    args = dict(
        root=root,
        work=work,
        world_size=a.world_size,
        epochs=a.epochs,
        cache_dir=osp.join(work, 'cache_'),
        init='file://' + osp.join(work, 'store_'),
    )
    print(
        f'{a.num_volumes} volumes of {a.side}^3 float32 = '
        f'{total / 2**20:.1f} MiB, {a.world_size} ranks, {a.epochs} '
        'epochs'
    )
    print(
        '| cache | rank | RSS before reading (MiB) | peak RSS (MiB) | '
        'peak - before (MiB) | held by its cache (MiB) |'
    )
    print('|---|---|---|---|---|---|')
    report = {}
    for mode in a.modes.split(','):
        res = measure(mode, args, a.timeout)
        report[mode] = res
        for r in res:
            print(
                f'| {mode} | {r["rank"]} | {r["before_kb"] / 1024:.0f} | '
                f'{r["peak_kb"] / 1024:.0f} | '
                f'{(r["peak_kb"] - r["before_kb"]) / 1024:.0f} | '
                f'{r["cached_bytes"] / 2**20:.1f} |'
            )
    return dict(total_bytes=total, modes=report)


if __name__ == '__main__':
    main()
