from .dino_vit import DINOVisionTransformer, count_dino_vit_params
from .dinov3_vit import DINOv3ViT

__all__ = ['DINOVisionTransformer', 'DINOv3ViT', 'count_dino_vit_params']
