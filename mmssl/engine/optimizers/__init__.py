from .layer_decay_lr_mult_constructor import \
    LayerDecayLrMultOptimWrapperConstructor
from .nan_guard_optim_wrapper import (NaNGuardAmpOptimWrapper,
                                      NaNGuardOptimWrapper)

__all__ = [
    'NaNGuardOptimWrapper', 'NaNGuardAmpOptimWrapper',
    'LayerDecayLrMultOptimWrapperConstructor'
]
