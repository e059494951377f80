from .target_generators import (
    PretrainedCLIPTarget,
    PretrainedDALLETarget,
    PretrainedVQKDTarget,
    StandInCLIPTarget,
    check_target_checkpoint,
)

__all__ = [
    'PretrainedCLIPTarget',
    'PretrainedDALLETarget',
    'PretrainedVQKDTarget',
    'StandInCLIPTarget',
    'check_target_checkpoint',
]
