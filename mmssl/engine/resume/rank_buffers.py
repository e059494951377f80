"""Per-rank buffers in checkpoints, so a resumed multi-process run is exact.

mmengine wraps models with ``broadcast_buffers=False`` and, without CUDA,
mmssl's runner turns SyncBatchNorm into BatchNorm: each rank then keeps its
own BatchNorm running statistics until ``SyncBuffersHook`` averages them at
the end of the epoch. A checkpoint written by rank 0 holds rank 0's buffers
only, so after a mid-epoch resume every other rank would continue from
rank 0's statistics and the epoch-end average would differ from the
uninterrupted run's. :func:`gather_rank_buffers` stores every rank's
floating-point buffers (collectively, small: BN statistics) and
:func:`restore_rank_buffers` gives each rank its own back.
"""

from typing import Dict, List, Optional

import torch
from mmengine.dist import all_gather_object, get_rank, get_world_size
from mmengine.model import is_model_wrapper
from torch import nn

RANK_BUFFERS_KEY = 'rank_buffers'


def _module(model: nn.Module) -> nn.Module:
    return model.module if is_model_wrapper(model) else model


def gather_rank_buffers(model: nn.Module) -> Optional[List[Dict]]:
    """Every rank's floating-point buffers, indexed by rank.

    A collective: call it on every rank. Returns None with one process.
    """
    if get_world_size() == 1:
        return None
    mine = {
        name: buf.detach().cpu().clone()
        for name, buf in _module(model).named_buffers()
        if buf.is_floating_point()
    }
    return all_gather_object(mine)


def restore_rank_buffers(
    model: nn.Module, saved: Optional[List[Dict]], logger=None
) -> bool:
    """Load this rank's buffers from :func:`gather_rank_buffers` output.

    Args:
        model (nn.Module): The (possibly wrapped) model.
        saved (list[dict], optional): ``checkpoint['rank_buffers']``.
        logger: Where to warn when the world size changed.

    Returns:
        bool: Whether this rank's buffers were restored.
    """
    if not saved:
        return False
    if len(saved) != get_world_size():
        if logger is not None:
            logger.warning(
                f'The checkpoint holds buffers of {len(saved)} ranks, this '
                f'run has {get_world_size()}: every rank continues from '
                "rank 0's buffers."
            )
        return False
    buffers = dict(_module(model).named_buffers())
    with torch.no_grad():
        for name, value in saved[get_rank()].items():
            if name in buffers:
                buffers[name].copy_(value.to(buffers[name].device))
    return True
