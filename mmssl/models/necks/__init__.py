from .relative_loc_neck import RelativeLocNeck

__all__ = ['RelativeLocNeck']
