from .pretext_cls_head import PretextClsHead

__all__ = ['PretextClsHead']
