from .deepcluster import DeepCluster
from .npid import NPID
from .odc import ODC, ODCMemory
from .relative_loc import RelativeLoc
from .rotation_pred import RotationPred

__all__ = [
    'DeepCluster',
    'NPID',
    'ODC',
    'ODCMemory',
    'RelativeLoc',
    'RotationPred',
]
