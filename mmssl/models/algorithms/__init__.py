from .deepcluster import DeepCluster
from .npid import NPID
from .odc import ODC, ODCMemory
from .relative_loc import RelativeLoc
from .rotation_pred import RotationPred
from .spark_features import SparKFullImage

__all__ = [
    'DeepCluster',
    'NPID',
    'ODC',
    'ODCMemory',
    'RelativeLoc',
    'RotationPred',
    'SparKFullImage',
]
