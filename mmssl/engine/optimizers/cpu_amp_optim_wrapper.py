"""Mixed precision on the CPU: bfloat16 autocast without loss scaling."""

from contextlib import contextmanager
from typing import Any, Optional, Union

import torch
from mmengine.optim import OptimWrapper

from mmssl.registry import OPTIM_WRAPPERS


@OPTIM_WRAPPERS.register_module()
class CPUAmpOptimWrapper(OptimWrapper):
    """``OptimWrapper`` that runs forward passes under CPU autocast.

    mmengine's ``AmpOptimWrapper`` needs a GPU; this lets ``--amp`` run
    (and be debugged) on a CPU-only machine. bfloat16 has float32's
    exponent range, so no loss scaling is needed.

    Args:
        dtype (str | torch.dtype): Autocast dtype, ``'bfloat16'``
            (default) or ``'float16'``.
        **kwargs: Passed to :class:`mmengine.optim.OptimWrapper`.
    """

    def __init__(
        self, dtype: Union[str, torch.dtype] = 'bfloat16', **kwargs
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(dtype, str):
            if dtype not in ('bfloat16', 'float16'):
                raise ValueError(
                    f'CPUAmpOptimWrapper dtype must be '
                    f'bfloat16 or float16, got {dtype!r}'
                )
            dtype = getattr(torch, dtype)
        self.cast_dtype = dtype

    @contextmanager
    def optim_context(self, model: torch.nn.Module):
        """Gradient-accumulation context plus CPU autocast."""
        with (
            super().optim_context(model),
            torch.autocast(device_type='cpu', dtype=self.cast_dtype),
        ):
            yield


#: mmengine's GPU-only AMP wrappers -> their bfloat16 CPU counterparts.
GPU_TO_CPU_AMP = {
    'AmpOptimWrapper': 'CPUAmpOptimWrapper',
    'NaNGuardAmpOptimWrapper': 'NaNGuardCPUAmpOptimWrapper',
}


def amp_on_cpu(optim_wrapper: Any) -> Optional[str]:
    """Swap a GPU AMP wrapper config for its CPU one (in place).

    ``AmpOptimWrapper`` asserts that a GPU is present, so an ImageNet
    config with AMP would stop on a CPU-only machine before its first
    step. Call this only when CUDA is not available.

    Args:
        optim_wrapper: The config's ``optim_wrapper`` (a dict).

    Returns:
        str | None: What was changed, for the log; None when nothing was.
    """
    if not isinstance(optim_wrapper, dict):
        return None
    current = optim_wrapper.get('type')
    if current not in GPU_TO_CPU_AMP:
        return None
    optim_wrapper['type'] = GPU_TO_CPU_AMP[current]
    if '_scope_' in optim_wrapper:  # e.g. 'mmpretrain' from a ``::`` base
        optim_wrapper['_scope_'] = 'mmssl'
    optim_wrapper.pop('loss_scale', None)  # bfloat16 needs no scaling
    optim_wrapper.pop('dtype', None)
    return (
        f'optim_wrapper: {current} needs a GPU and CUDA is not available; '
        f'using {optim_wrapper["type"]} (bfloat16 autocast) instead.'
    )
