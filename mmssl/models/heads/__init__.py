from .dino_head import DINOHead
from .pretext_cls_head import PretextClsHead

__all__ = ['DINOHead', 'PretextClsHead']
