from .mae3d_decoder import MAEDecoder3D
from .relative_loc_neck import RelativeLocNeck

__all__ = ['MAEDecoder3D', 'RelativeLocNeck']
