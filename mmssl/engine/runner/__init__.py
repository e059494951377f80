from .feature_loops import FeatureTestLoop, FeatureValLoop
from .loops import ResumableEpochBasedTrainLoop, ResumableIterBasedTrainLoop

__all__ = [
    'FeatureTestLoop',
    'FeatureValLoop',
    'ResumableEpochBasedTrainLoop',
    'ResumableIterBasedTrainLoop',
]
