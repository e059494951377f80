from .cpu_amp_optim_wrapper import CPUAmpOptimWrapper
from .layer_decay_optim_wrapper_constructor import (
    LayerDecayOptimWrapperConstructor,
)
from .linear_warmup import LinearWarmupLR, LinearWarmupParamScheduler
from .nan_guard_optim_wrapper import (
    NaNGuardAmpOptimWrapper,
    NaNGuardCPUAmpOptimWrapper,
    NaNGuardOptimWrapper,
)

__all__ = [
    'CPUAmpOptimWrapper',
    'LayerDecayOptimWrapperConstructor',
    'LinearWarmupLR',
    'LinearWarmupParamScheduler',
    'NaNGuardAmpOptimWrapper',
    'NaNGuardCPUAmpOptimWrapper',
    'NaNGuardOptimWrapper',
]
