from .dino_vit import DINOVisionTransformer, count_dino_vit_params

__all__ = ['DINOVisionTransformer', 'count_dino_vit_params']
