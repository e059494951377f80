from .deepcluster_hook import DeepClusterHook
from .odc_hook import ODCHook

__all__ = ['DeepClusterHook', 'ODCHook']
