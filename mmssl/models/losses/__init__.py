from .centering import TeacherCentering, sinkhorn_knopp
from .dino_loss import DINOLoss
from .gram_loss import GramLoss
from .ibot_patch_loss import iBOTPatchLoss
from .koleo_loss import KoLeoLoss
from .nt_xent_loss import NTXentLoss, nt_xent_loss

__all__ = [
    'DINOLoss',
    'GramLoss',
    'iBOTPatchLoss',
    'KoLeoLoss',
    'NTXentLoss',
    'nt_xent_loss',
    'TeacherCentering',
    'sinkhorn_knopp',
]
