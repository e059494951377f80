from .compile_blocks import compile_blocks
from .data_preprocessors import (
    MultiChannelDataPreprocessor,
    TwoNormOrSingleDataPreprocessor,
)
from .model_parts import find_backbone
from .target_generators import (
    FloatHOGGenerator,
    PatchHOGGenerator,
    PretrainedCLIPTarget,
    PretrainedDALLETarget,
    PretrainedVQKDTarget,
    StandInCLIPTarget,
    check_target_checkpoint,
)

__all__ = [
    'compile_blocks',
    'find_backbone',
    'TwoNormOrSingleDataPreprocessor',
    'MultiChannelDataPreprocessor',
    'FloatHOGGenerator',
    'PatchHOGGenerator',
    'PretrainedCLIPTarget',
    'PretrainedDALLETarget',
    'PretrainedVQKDTarget',
    'StandInCLIPTarget',
    'check_target_checkpoint',
]
