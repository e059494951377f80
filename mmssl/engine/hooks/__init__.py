from .dist_loss_average_hook import DistLossAverageHook

__all__ = ['DistLossAverageHook']
