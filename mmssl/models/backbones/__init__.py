from .base_vit import BaseViT
from .dino_vit import DINOVisionTransformer
from .dino_vit_params import count_dino_vit_params
from .dinov3_vit import DINOv3ViT
from .swin_vit3d import SwinViT3D
from .vit3d import VisionTransformer3D

__all__ = [
    'BaseViT',
    'DINOVisionTransformer',
    'DINOv3ViT',
    'count_dino_vit_params',
    'SwinViT3D',
    'VisionTransformer3D',
]
