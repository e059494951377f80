from .feature_loops import FeatureTestLoop, FeatureValLoop

__all__ = ['FeatureTestLoop', 'FeatureValLoop']
