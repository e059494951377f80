from .feature_eval_hook import FeatureEvalHook
from .rank_me_hook import RankMeHook

__all__ = ['FeatureEvalHook', 'RankMeHook']
