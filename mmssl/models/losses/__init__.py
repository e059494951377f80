from .centering import TeacherCentering, sinkhorn_knopp
from .dino_loss import DINOLoss
from .gram_loss import GramLoss
from .ibot_patch_loss import iBOTPatchLoss
from .koleo_loss import KoLeoLoss

__all__ = [
    'DINOLoss',
    'GramLoss',
    'iBOTPatchLoss',
    'KoLeoLoss',
    'TeacherCentering',
    'sinkhorn_knopp',
]
