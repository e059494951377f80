"""Starting torch.distributed for CPU (gloo) and GPU (nccl) alike.

mmengine's ``init_dist('pytorch')`` calls ``torch.cuda.set_device`` and so
fails on a machine without CUDA, and the configs ask for ``nccl``, which
needs GPUs. :func:`init_distributed` picks the backend that can work,
fills the rendezvous variables from torchrun, SLURM or MPI, and starts
the default process group itself; the Runner then finds it initialised and
skips its own ``init_dist``.
"""

import datetime
import os
from typing import MutableMapping, Optional, Tuple

from mmssl.launch import choose_backend, dist_env


def init_distributed(
    launcher: str,
    backend: Optional[str] = None,
    timeout: Optional[float] = None,
    environ: Optional[MutableMapping[str, str]] = None,
) -> Tuple[int, int, int, str]:
    """Start the default process group for ``launcher``.

    Sets ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``MASTER_ADDR``/
    ``MASTER_PORT`` in ``environ`` (mmengine reads ``LOCAL_RANK`` later),
    binds the process to GPU ``LOCAL_RANK`` when CUDA is there, and calls
    ``torch.distributed.init_process_group``. Does nothing but report when
    a group already exists.

    Args:
        launcher (str): ``'pytorch'``, ``'slurm'`` or ``'mpi'``.
        backend (str, optional): Requested backend; see
            :func:`choose_backend`.
        timeout (float, optional): Collective timeout in seconds.
        environ (MutableMapping, optional): Defaults to ``os.environ``.

    Returns:
        tuple: ``(rank, world_size, local_rank, backend)``.
    """
    import torch
    import torch.distributed as torch_dist

    environ = os.environ if environ is None else environ
    if torch_dist.is_initialized():
        return (
            torch_dist.get_rank(),
            torch_dist.get_world_size(),
            int(environ.get('LOCAL_RANK', 0)),
            torch_dist.get_backend(),
        )
    values = dist_env(launcher, environ)
    environ.update(values)
    cuda = torch.cuda.is_available()
    backend = choose_backend(backend, cuda)
    local_rank = int(values['LOCAL_RANK'])
    if cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    kwargs = {}
    if timeout is not None:
        kwargs['timeout'] = datetime.timedelta(seconds=float(timeout))
    torch_dist.init_process_group(
        backend=backend,
        init_method='env://',
        rank=int(values['RANK']),
        world_size=int(values['WORLD_SIZE']),
        **kwargs,
    )
    return (
        int(values['RANK']),
        int(values['WORLD_SIZE']),
        local_rank,
        backend,
    )


def cpu_model_wrapper_cfg(
    model_wrapper_cfg: Optional[dict], find_unused_parameters: bool = False
) -> dict:
    """A model wrapper config that DDP accepts for a CPU model.

    mmengine passes ``device_ids=[LOCAL_RANK]`` to DDP, which DDP refuses
    for a module on the CPU; an explicit ``device_ids=None`` in the wrapper
    config wins over mmengine's default.

    Args:
        model_wrapper_cfg (dict, optional): The config's wrapper (may be
            None).
        find_unused_parameters (bool): Forwarded to DDP when a new config
            is made. Defaults to False.

    Returns:
        dict: A wrapper config with ``device_ids=None`` for DDP types.
    """
    if model_wrapper_cfg is None:
        return dict(
            type='MMDistributedDataParallel',
            device_ids=None,
            broadcast_buffers=False,
            find_unused_parameters=find_unused_parameters,
        )
    cfg = dict(model_wrapper_cfg)
    wrapper = cfg.get('type', 'MMDistributedDataParallel')
    if isinstance(wrapper, str) and 'DistributedDataParallel' in wrapper:
        cfg['device_ids'] = None
    return cfg


def setup_distributed_cfg(cfg, launcher: str) -> Tuple[int, int]:
    """Start distribution for ``cfg`` and adapt it to the hardware.

    For ``launcher != 'none'``: starts the process group (gloo without
    CUDA, whatever ``env_cfg.dist_cfg.backend`` says), records the backend
    used in ``cfg.env_cfg.dist_cfg.backend`` and sets ``cfg.launcher``.
    The registered :class:`~mmssl.engine.runner.SSLRunner` then wraps a
    CPU model so that DDP accepts it.

    Args:
        cfg (mmengine.Config): The config, changed in place.
        launcher (str): One of :data:`mmssl.launch.LAUNCHERS`.

    Returns:
        tuple: ``(rank, world_size)``.
    """
    cfg.launcher = launcher
    if launcher == 'none':
        return 0, 1
    env_cfg = cfg.setdefault('env_cfg', {})
    dist_cfg = env_cfg.setdefault('dist_cfg', {})
    rank, world_size, _, backend = init_distributed(
        launcher, dist_cfg.get('backend'), dist_cfg.get('timeout')
    )
    dist_cfg['backend'] = backend
    return rank, world_size
