"""Memory banks stay identical across ranks (2 CPU processes, gloo)."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from tests.support.dist import file_init_method, init_gloo, spawn


def _worker(rank: int, init_method: str, out_dir: str) -> None:
    init_gloo(rank, 2, init_method)
    from mmssl.models.algorithms.npid import NPID
    from mmssl.models.algorithms.odc import ODCMemory

    # NPID: each rank updates its own rows; both must see both updates.
    torch.manual_seed(0)  # same initial bank on both ranks
    bank = F.normalize(torch.randn(4, 3), dim=1)
    holder = torch.nn.Module()
    holder.register_buffer('memory_bank', bank.clone())
    holder.bank_momentum = 0.5
    feats = F.normalize(
        torch.full((1, 3), float(rank + 1)) + torch.tensor([[rank, 0.0, 1.0]]),
        dim=1,
    )
    NPID.update_memory_bank(holder, torch.tensor([rank]), feats)

    mem = ODCMemory(
        num_samples=4, feat_dim=3, num_classes=2, momentum=0.5, min_cluster=1
    )
    mem.init_memory(bank.clone(), torch.tensor([0, 0, 1, 1]))
    mem.update_samples(torch.tensor([2 + rank]), feats)
    torch.save(
        dict(
            npid=holder.memory_bank,
            odc=mem.features,
            labels=mem.labels,
            feats=feats,
        ),
        os.path.join(out_dir, f'rank{rank}.pth'),
    )
    dist.destroy_process_group()


@pytest.mark.slow
def test_banks_gather_updates_from_every_rank(tmp_path):
    spawn(_worker, file_init_method(tmp_path), str(tmp_path))
    r0, r1 = (torch.load(tmp_path / f'rank{i}.pth') for i in range(2))
    assert torch.equal(r0['npid'], r1['npid'])
    assert torch.equal(r0['odc'], r1['odc'])
    assert torch.equal(r0['labels'], r1['labels'])
    torch.manual_seed(0)
    bank = F.normalize(torch.randn(4, 3), dim=1)
    for rank, got in enumerate((r0, r1)):
        expected = F.normalize(0.5 * bank[rank] + 0.5 * got['feats'][0], dim=0)
        assert torch.allclose(r0['npid'][rank], expected, atol=1e-6)
        expected_odc = F.normalize(
            0.5 * bank[2 + rank] + 0.5 * got['feats'][0], dim=0
        )
        assert torch.allclose(r0['odc'][2 + rank], expected_odc, atol=1e-6)
    assert torch.equal(r0['npid'][2:], bank[2:])  # rows nobody updated
