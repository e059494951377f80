from .deepcluster import DeepCluster
from .dino import DINO, DINOv2, iBOT
from .dino_family import DINOFamily
from .mae3d import MAE3D
from .mff_features import MFFFullImage
from .npid import NPID
from .odc import ODC, ODCMemory
from .pixmim import PixMIM
from .relative_loc import RelativeLoc
from .rotation_pred import RotationPred
from .simclr3d import SimCLR3D
from .spark_features import SparKFullImage
from .swinunetr_pretrain import SwinUNETRPretrain

__all__ = [
    'DINO',
    'iBOT',
    'DINOv2',
    'DINOFamily',
    'DeepCluster',
    'NPID',
    'ODC',
    'ODCMemory',
    'PixMIM',
    'RelativeLoc',
    'RotationPred',
    'SparKFullImage',
    'MFFFullImage',
    'MAE3D',
    'SimCLR3D',
    'SwinUNETRPretrain',
]
