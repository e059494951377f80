from .layer_decay_optim_wrapper_constructor import (
    LayerDecayOptimWrapperConstructor,
)
from .nan_guard_optim_wrapper import (
    NaNGuardAmpOptimWrapper,
    NaNGuardOptimWrapper,
)

__all__ = [
    'LayerDecayOptimWrapperConstructor', 'NaNGuardOptimWrapper',
    'NaNGuardAmpOptimWrapper'
]
