from .compile_blocks import compile_blocks
from .data_preprocessors import TwoNormOrSingleDataPreprocessor
from .target_generators import (
    FloatHOGGenerator,
    PretrainedCLIPTarget,
    PretrainedDALLETarget,
    PretrainedVQKDTarget,
    StandInCLIPTarget,
    check_target_checkpoint,
)

__all__ = [
    'compile_blocks',
    'TwoNormOrSingleDataPreprocessor',
    'FloatHOGGenerator',
    'PretrainedCLIPTarget',
    'PretrainedDALLETarget',
    'PretrainedVQKDTarget',
    'StandInCLIPTarget',
    'check_target_checkpoint',
]
