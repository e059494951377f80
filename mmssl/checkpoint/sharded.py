"""Sharded checkpoints with ``torch.distributed.checkpoint`` (DCP).

Every rank writes its own shards of the model and optimizer into one
folder; loading reshards to whatever world size reads it, so a run saved
on 2 ranks resumes on 1 or 4. The folder is written under a temporary
name and renamed into place by rank 0 only after every rank has finished
(barriers around the save), so a torn sharded checkpoint never carries
the final name. What is not model or optimizer state (a run's meta,
message hub, schedulers, loop position and random states) goes into one
ordinary file of the folder, :data:`SHARDED_RUNNER_STATE`, written by
rank 0 before the rename and read with the safe loader
(:func:`load_runner_state`). :func:`dcp_to_file` turns a folder into an
ordinary ``torch.save`` file that :func:`~.io.torch_load_safe` reads.
"""

import contextlib
import os
import os.path as osp
import shutil
import warnings
from typing import Dict, Iterator, Optional

import torch
from torch import nn

from mmssl.launch.resume import SHARDED_RUNNER_STATE

from .io import load_checkpoint, save_checkpoint_atomic

#: Suffix of the folder being written; never chosen as a checkpoint.
TMP_SUFFIX = '.tmp'


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


@contextlib.contextmanager
def _single_process_quiet() -> Iterator[None]:
    """Silence DCP's warning that it runs without a process group (one
    process: an expected case here, at every save and load)."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            'ignore',
            message='torch.distributed is disabled',
            category=UserWarning,
        )
        yield


def _barrier() -> None:
    dist = _dist()
    if dist is not None:
        dist.barrier()


def _rank() -> int:
    dist = _dist()
    return dist.get_rank() if dist is not None else 0


def _remove(path: str) -> None:
    """Delete a file or folder, if there."""
    if osp.isdir(path) and not osp.islink(path):
        shutil.rmtree(path)
    elif osp.lexists(path):
        os.remove(path)


def training_state(
    model: nn.Module, optimizer: Optional[torch.optim.Optimizer] = None
) -> Dict[str, dict]:
    """``{'state_dict': ..., 'optimizer': ...}`` of sharded (or plain)
    modules, keyed by parameter name so any world size can read them."""
    from torch.distributed.checkpoint.state_dict import get_state_dict

    optimizers = [] if optimizer is None else [optimizer]
    model_sd, optim_sd = get_state_dict(model, optimizers)
    state = {'state_dict': model_sd}
    if optimizer is not None:
        state['optimizer'] = optim_sd
    return state


def save_sharded(
    state: Dict[str, dict], dirname: str, extra: Optional[dict] = None
) -> None:
    """Write ``state`` as a DCP folder ``dirname``, atomically.

    Called by every rank. Writes ``dirname + '.tmp'``, then rank 0
    replaces ``dirname`` with it once all ranks are done.

    Args:
        state (dict): E.g. :func:`training_state` plus plain metadata.
        dirname (str): Final folder.
        extra (dict, optional): Rank 0's runner state, saved with
            ``torch.save`` as :data:`SHARDED_RUNNER_STATE` in the folder
            (other ranks' ``extra`` is ignored). Defaults to None.
    """
    import torch.distributed.checkpoint as dcp

    tmp = dirname + TMP_SUFFIX
    if _rank() == 0 and osp.exists(tmp):
        shutil.rmtree(tmp)  # left by an earlier, interrupted save
    _barrier()
    with _single_process_quiet():
        dcp.save(state, checkpoint_id=tmp)
    _barrier()
    if _rank() == 0:
        if extra is not None:
            save_checkpoint_atomic(extra, osp.join(tmp, SHARDED_RUNNER_STATE))
        # a folder of the same name (saved again at the same step) is
        # moved aside, never deleted before the new one has its name
        old = dirname + '.old' + TMP_SUFFIX
        if osp.lexists(dirname):
            _remove(old)
            os.replace(dirname, old)
        os.replace(tmp, dirname)
        _remove(old)
    _barrier()


def load_sharded(
    dirname: str,
    model: nn.Module,
    optimizer: Optional[torch.optim.Optimizer] = None,
) -> None:
    """Load a DCP folder into ``model`` (and ``optimizer``) in place,
    resharding to the current world size (also 1, without a group)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    if dirname.endswith(TMP_SUFFIX) or not osp.isfile(
        osp.join(dirname, '.metadata')
    ):
        raise FileNotFoundError(f'{dirname} is not a complete checkpoint.')
    state = training_state(model, optimizer)
    with _single_process_quiet():
        dcp.load(state, checkpoint_id=dirname)
    optimizers = [] if optimizer is None else [optimizer]
    set_state_dict(
        model,
        optimizers,
        model_state_dict=state['state_dict'],
        optim_state_dict=state.get('optimizer', {}),
    )


def load_runner_state(dirname: str, trusted: Optional[bool] = None) -> dict:
    """The :data:`SHARDED_RUNNER_STATE` of a sharded checkpoint folder.

    Read with :func:`~.io.load_checkpoint` (the allowlist applies).

    Args:
        dirname (str): The folder.
        trusted (bool, optional): As for :func:`~.io.load_checkpoint`.

    Raises:
        FileNotFoundError: The folder has no runner state (written by
            :func:`save_sharded` without ``extra``).
    """
    path = osp.join(dirname, SHARDED_RUNNER_STATE)
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'{dirname} has no {SHARDED_RUNNER_STATE}: it holds model and '
            'optimizer shards only, not a training run to resume; load '
            'it with mmssl.checkpoint.load_sharded.'
        )
    return load_checkpoint(path, trusted=trusted)


def dcp_to_file(dirname: str, filename: str) -> None:
    """Gather a DCP folder into one ``torch.save`` file, atomically."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    from .io import _atomic_write

    out_dir = osp.dirname(osp.abspath(filename))
    os.makedirs(out_dir, exist_ok=True)
    tmp = osp.join(out_dir, f'.{osp.basename(filename)}.dcp.tmp')
    try:
        dcp_to_torch_save(dirname, tmp)
        with open(tmp, 'rb') as f:
            data = f.read()
        _atomic_write(lambda f: f.write(data), filename)
    finally:
        if osp.exists(tmp):
            os.remove(tmp)
