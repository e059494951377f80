"""Two CPU processes (gloo) with DataLoader workers over a folder with bad
files: iteration finishes and the bad files are counted across ranks."""

import pytest

from tests.support.dist import file_init_method, init_gloo, spawn


def _worker(rank, world, init_method, root, out):
    import torch.distributed as dist
    from mmengine.dataset import DefaultSampler, default_collate
    from torch.utils.data import DataLoader

    from mmssl.engine.hooks import BadFileCounter
    from mmssl.setup_env import register_all_modules

    register_all_modules()
    from mmssl.datasets import ImageFolderDataset

    init_gloo(rank, world, init_method)
    ds = ImageFolderDataset(
        data_root=root,
        max_bad_ratio=1.0,
        pipeline=[
            dict(type='LoadImageRobust'),
            dict(
                type='MultiCrop',
                global_size=16,
                local_size=8,
                num_local_crops=1,
            ),
            dict(type='PackInputs'),
        ],
    )
    sampler = DefaultSampler(ds, shuffle=True, seed=0)
    loader = DataLoader(
        ds,
        batch_size=2,
        sampler=sampler,
        num_workers=2,
        collate_fn=default_collate,
    )
    counter = BadFileCounter()
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for batch in loader:
            assert batch['inputs'][0].shape[1:] == (3, 16, 16)
            counter.update(batch['data_samples'])
    counter.sync()
    if rank == 0:
        with open(out, 'w') as f:
            f.write(f'{len(counter.bad)} {counter.samples}\n')
            for p, r in sorted(counter.bad.items()):
                f.write(f'{p}\t{r}\n')
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_process_gloo_with_workers_skips_bad_files(messy_root, tmp_path):
    root, files = messy_root
    out = str(tmp_path / 'summary.txt')
    spawn(_worker, 2, file_init_method(tmp_path), root, out)
    lines = open(out).read().splitlines()
    n_bad, samples = map(int, lines[0].split())
    assert n_bad == 3  # zero-byte, truncated, text: each counted once
    assert samples == 2 * len(files)  # 2 epochs, padded to the world size
    assert any('zero-byte' in line for line in lines[1:])
