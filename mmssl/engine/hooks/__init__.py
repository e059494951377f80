from .freeze_last_layer_hook import FreezeLastLayerHook
from .teacher_ema_hook import TeacherEMAHook
from .teacher_temp_warmup_hook import TeacherTempWarmupHook

__all__ = ['TeacherEMAHook', 'TeacherTempWarmupHook', 'FreezeLastLayerHook']
