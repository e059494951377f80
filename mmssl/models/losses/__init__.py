from .centering import TeacherCentering, sinkhorn_knopp
from .dino_loss import DINOLoss
from .ibot_patch_loss import iBOTPatchLoss
from .koleo_loss import KoLeoLoss

__all__ = [
    'DINOLoss',
    'iBOTPatchLoss',
    'KoLeoLoss',
    'TeacherCentering',
    'sinkhorn_knopp',
]
