from .cpu_amp_optim_wrapper import CPUAmpOptimWrapper
from .layer_decay_optim_wrapper_constructor import (
    LayerDecayOptimWrapperConstructor,
)

__all__ = ['CPUAmpOptimWrapper', 'LayerDecayOptimWrapperConstructor']
