"""Helpers of the drop-path and host-sync tests: a branch that records its
batch sizes, one residual through the blocks' own stochastic-depth code,
a counter of the aten ops that read a device value on the host, and a
multi-crop batch of the DINOv2 digits demo."""

import collections

import numpy as np
import torch
from mmpretrain.structures import DataSample
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from mmssl.datasets.block_mask_collate import block_mask_collate
from mmssl.models.layers.drop_path import draw_keep, packed_residual
from mmssl.models.layers.token_packing import TokenGroups

#: aten ops whose result needs a value from the device on the host
HOST_VALUE_OPS = (
    '_local_scalar_dense',
    'item',
    'nonzero',
    'is_nonzero',
    'masked_select',
    'equal',
    '_unique',
    'unique_consecutive',
    'bincount',
    'repeat_interleave',
)


class Recorder(nn.Module):
    """A linear branch that records the batch sizes it sees."""

    def __init__(self, dim=4):
        super().__init__()
        torch.manual_seed(1)
        self.lin = nn.Linear(dim, dim)
        self.sizes = []

    def forward(self, x):
        self.sizes.append(x.shape[0])
        return self.lin(x)


def drop_add_residual(
    x, branch, drop_prob, training, generator=None, mode='bernoulli'
):
    """``x + drop_path(branch(x))`` for ``x`` (B, ...), through the code a
    block runs (:func:`draw_keep` then :func:`packed_residual`, one group
    of B samples): ``branch`` sees the kept samples only, (k, ...)."""
    if not training:
        return x + branch(x)
    shape = x.shape[1:]
    tokens = shape[:-1].numel()  # rows per sample
    groups = TokenGroups(((x.shape[0], tokens),))
    gens = None if generator is None else [generator]
    keep = draw_keep(groups, drop_prob, 'below', x.device, x.dtype, gens, mode)

    def rows_branch(rows, layout):  # (k*T, C) -> (k, ...) -> (k*T, C)
        return branch(rows.view(-1, *shape)).reshape(rows.shape)

    out = packed_residual(x.reshape(-1, shape[-1]), rows_branch, groups, keep)
    return out.view(x.shape)


class HostSyncCounter(TorchDispatchMode):
    """Count aten ops that read a device value on the host (boolean
    indexing too: ``aten.index`` with a bool index)."""

    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in HOST_VALUE_OPS or (
            name in ('index', 'index_put_', 'index_put')
            and any(
                torch.is_tensor(t) and t.dtype in (torch.bool, torch.uint8)
                for t in args[1]
            )
        ):
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


def demo_batch(seed, batch=4, pin=False):
    """A collated batch of the digits demo's shape: per image 2 global
    crops of 32 px and 4 local ones of 16 px, iBOT masks from
    ``block_mask_collate`` (patch 4); pinned if ``pin``."""
    gen = torch.Generator().manual_seed(seed)

    def img(size):
        return torch.randint(0, 255, (3, size, size), generator=gen).byte()

    items = [
        dict(
            inputs=[img(32) for _ in range(2)] + [img(16) for _ in range(4)],
            data_samples=DataSample(),
        )
        for _ in range(batch)
    ]
    np.random.seed(seed)
    data = block_mask_collate(items, patch_size=4)
    if pin:
        data['inputs'] = [x.pin_memory() for x in data['inputs']]
        for sample in data['data_samples']:
            sample.mask = sample.mask.pin_memory()
    return data
