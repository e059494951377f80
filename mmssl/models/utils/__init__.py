from .data_preprocessors import TwoNormOrSingleDataPreprocessor
from .target_generators import (
    PretrainedCLIPTarget,
    PretrainedDALLETarget,
    PretrainedVQKDTarget,
    StandInCLIPTarget,
    check_target_checkpoint,
)
from .vit_ckpt_convert import (
    add_prefix,
    dinov2_to_mmssl,
    dinov2_to_timm,
    find_backbone_prefixes,
    load_checkpoint_file,
    mmssl_to_dinov2,
    mmssl_to_timm,
    select_prefix,
    unwrap_checkpoint,
)

__all__ = [
    'add_prefix',
    'dinov2_to_mmssl',
    'dinov2_to_timm',
    'find_backbone_prefixes',
    'load_checkpoint_file',
    'mmssl_to_dinov2',
    'mmssl_to_timm',
    'select_prefix',
    'unwrap_checkpoint',
    'TwoNormOrSingleDataPreprocessor',
    'PretrainedCLIPTarget',
    'PretrainedDALLETarget',
    'PretrainedVQKDTarget',
    'StandInCLIPTarget',
    'check_target_checkpoint',
]
