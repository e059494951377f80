from .dino import DINO
from .dinov2 import DINOv2
from .ibot import iBOT

__all__ = ['DINO', 'iBOT', 'DINOv2']
