from .bad_file_hook import BadFileCounter, BadFileSummaryHook, collect_skipped
from .freeze_last_layer_hook import FreezeLastLayerHook
from .teacher_ema_hook import TeacherEMAHook
from .teacher_temp_warmup_hook import TeacherTempWarmupHook

__all__ = [
    'BadFileSummaryHook', 'BadFileCounter', 'collect_skipped',
    'TeacherEMAHook', 'TeacherTempWarmupHook', 'FreezeLastLayerHook'
]
