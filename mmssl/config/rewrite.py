"""The config rewrites ``tools/train.py`` makes before building the Runner.

``--auto-scale-lr`` scales the learning rates of the optimizer configs
(and absolute ``eta_min`` of the schedulers) by the linear or square-root
rule when the total batch size differs from the config's
``auto_scale_lr.base_batch_size``; ``--amp`` switches the optim wrapper to
mixed precision (mmengine's AMP wrapper on CUDA, bf16 autocast on the
CPU), keeping mmssl's NaN guard where the config has it. Both change the
config in place and return what they did, for the log.
"""

import math
from typing import Any, Dict, List, Tuple


def lr_scale_factor(
    real_batch_size: int, base_batch_size: int, rule: str
) -> float:
    """Factor for the learning rate when the batch size changes.

    ``linear`` (Goyal et al. 2017, https://arxiv.org/abs/1706.02677):
    ``real / base``. ``sqrt`` (used by DINOv2 w.r.t. a base of 1024,
    Oquab et al. 2023, https://arxiv.org/abs/2304.07193):
    ``sqrt(real / base)``.

    Args:
        real_batch_size (int): world size x per-process batch size.
        base_batch_size (int): Batch size the config's lr was tuned for.
        rule (str): ``'linear'`` or ``'sqrt'``.

    Returns:
        float: The factor.
    """
    if base_batch_size <= 0 or real_batch_size <= 0:
        raise ValueError(
            f'Batch sizes must be positive, got real='
            f'{real_batch_size}, base={base_batch_size}.'
        )
    ratio = real_batch_size / base_batch_size
    if rule == 'linear':
        return ratio
    if rule == 'sqrt':
        return math.sqrt(ratio)
    raise ValueError(
        f'Unknown lr scaling rule {rule!r}; use "linear" or "sqrt".'
    )


def _optimizer_cfgs(optim_wrapper: Dict[str, Any]) -> List[Tuple[str, Dict]]:
    if 'optimizer' in optim_wrapper:
        return [('optim_wrapper.optimizer', optim_wrapper['optimizer'])]
    found = []
    for name, sub in optim_wrapper.items():
        if isinstance(sub, dict) and 'optimizer' in sub:
            found.append((f'optim_wrapper.{name}.optimizer', sub['optimizer']))
    return found


def auto_scale_lr_in_cfg(
    cfg: Any, world_size: int, rule: str = 'linear'
) -> List[str]:
    """Scale the config's learning rates for the real batch size.

    Real batch size = ``world_size`` x ``train_dataloader.batch_size``;
    the base is ``auto_scale_lr.base_batch_size``. Scales ``lr`` of every
    optimizer in ``optim_wrapper`` and the absolute ``eta_min`` of lr
    schedulers, then sets ``auto_scale_lr.enable=False`` so mmengine does
    not scale a second time.

    Args:
        cfg (mmengine.Config): Config, changed in place.
        world_size (int): Number of processes.
        rule (str): ``'linear'`` or ``'sqrt'``.

    Returns:
        list[str]: Log lines giving the rule, batch sizes and old -> new lr.

    Raises:
        ValueError: without ``auto_scale_lr.base_batch_size`` or an
            optimizer ``lr``.
    """
    auto = cfg.get('auto_scale_lr') or {}
    base = auto.get('base_batch_size')
    if not base:
        raise ValueError(
            '--auto-scale-lr needs `auto_scale_lr = dict(base_batch_size=N)` '
            'in the config (N: the total batch size its lr was tuned for); '
            'add it or pass --cfg-options auto_scale_lr.base_batch_size=N.'
        )
    batch = cfg.train_dataloader.batch_size
    real = world_size * batch
    factor = lr_scale_factor(real, base, rule)
    lines = [
        f'auto-scale-lr: rule={rule}, real batch size {real} (world size '
        f'{world_size} x batch_size {batch}), base batch size {base}, '
        f'factor {factor:.6g}'
    ]
    optimizers = _optimizer_cfgs(cfg.optim_wrapper)
    if not optimizers or any('lr' not in o for _, o in optimizers):
        raise ValueError(
            '--auto-scale-lr found no optimizer `lr` in optim_wrapper.'
        )
    for path, opt in optimizers:
        old = opt['lr']
        opt['lr'] = old * factor
        lines.append(f'auto-scale-lr: {path}.lr {old:.6g} -> {opt["lr"]:.6g}')
    schedulers = cfg.get('param_scheduler') or []
    if isinstance(schedulers, dict):
        schedulers = [schedulers]
    for i, sched in enumerate(schedulers):
        if not isinstance(sched, dict) or 'eta_min' not in sched:
            continue
        name = str(sched.get('type', ''))
        is_lr = (
            sched['param_name'] == 'lr'
            if 'param_name' in sched
            else name.endswith('LR')
        )
        if is_lr:
            old = sched['eta_min']
            sched['eta_min'] = old * factor
            lines.append(
                f'auto-scale-lr: param_scheduler.{i}.eta_min '
                f'{old:.6g} -> {sched["eta_min"]:.6g}'
            )
    auto['enable'] = False
    cfg.auto_scale_lr = auto
    return lines


def _set_type(cfg: Any, type_name: str) -> None:
    """Set ``cfg['type']``; a dict inherited from an ``mmpretrain::`` base
    carries ``_scope_='mmpretrain'``, whose registries lack mmssl's
    classes, so its scope becomes mmssl's (which sees all three)."""
    cfg['type'] = type_name
    if '_scope_' in cfg:
        cfg['_scope_'] = 'mmssl'


def enable_amp_in_cfg(cfg: Any, cuda_available: bool) -> str:
    """Switch the optimizer wrapper to mixed precision.

    With CUDA: mmengine's ``AmpOptimWrapper`` (float16 with a dynamic
    loss scale, unless the config sets ``dtype``). Without CUDA:
    bfloat16 autocast on the CPU (``CPUAmpOptimWrapper``), since
    ``AmpOptimWrapper`` requires a GPU.

    Args:
        cfg (mmengine.Config): Config, changed in place.
        cuda_available (bool): Whether a GPU is used.

    Returns:
        str: What was done, for the log.
    """
    wrapper = cfg.optim_wrapper
    current = wrapper.get('type', 'OptimWrapper')
    # full-precision wrapper -> (GPU AMP wrapper, CPU bfloat16 wrapper)
    amp_types = {
        'OptimWrapper': ('AmpOptimWrapper', 'CPUAmpOptimWrapper'),
        'NaNGuardOptimWrapper': (
            'NaNGuardAmpOptimWrapper',
            'NaNGuardCPUAmpOptimWrapper',
        ),
    }
    gpu_to_cpu = {gpu: cpu for gpu, cpu in amp_types.values()}
    if current in gpu_to_cpu or current in gpu_to_cpu.values():
        if current in gpu_to_cpu and not cuda_available:
            _set_type(wrapper, gpu_to_cpu[current])
            wrapper.pop('loss_scale', None)
            return (
                f'--amp: the config has {current} but CUDA is not '
                f'available; using {wrapper["type"]} (bfloat16).'
            )
        return f'--amp: the config already uses {current}.'
    if current not in amp_types:
        raise ValueError(
            f'--amp cannot convert optim_wrapper type {current!r}; set an '
            'AMP wrapper in the config instead.'
        )
    gpu_type, cpu_type = amp_types[current]
    if cuda_available:
        _set_type(wrapper, gpu_type)
        wrapper.setdefault('loss_scale', 'dynamic')
        return (
            f'--amp: {gpu_type} (dtype '
            f'{wrapper.get("dtype", "float16")}, loss_scale '
            f'{wrapper["loss_scale"]}).'
        )
    _set_type(wrapper, cpu_type)
    return (
        f'--amp: CUDA is not available, using {cpu_type} '
        '(bfloat16 autocast on the CPU, no loss scaling).'
    )
