from .conv_transpose_decoder3d import ConvTransposeDecoder3D
from .densecl_bn_neck import DenseCLBNNeck
from .mae3d_decoder import MAEDecoder3D
from .relative_loc_neck import RelativeLocNeck

__all__ = [
    'ConvTransposeDecoder3D',
    'DenseCLBNNeck',
    'MAEDecoder3D',
    'RelativeLocNeck',
]
