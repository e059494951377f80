from .atomic_checkpoint_hook import AtomicCheckpointHook
from .bad_file_hook import BadFileCounter, BadFileSummaryHook, collect_skipped
from .base_lr_log_hook import BaseLRLogHook
from .batched_runtime_info_hook import BatchedRuntimeInfoHook
from .deepcluster_hook import DeepClusterHook
from .dist_loss_average_hook import DistLossAverageHook
from .freeze_last_layer_hook import FreezeLastLayerHook
from .gram_teacher_hook import GramTeacherHook
from .log_interval_hook import LogIntervalHook
from .loss_weight_schedule_hook import LossWeightScheduleHook
from .odc_hook import ODCHook
from .pretrained_init_hook import PretrainedInitHook
from .run_summary_hook import RunSummaryHook
from .swav_queue_hook import SwAVQueueHook
from .teacher_ema_hook import TeacherEMAHook
from .teacher_temp_warmup_hook import TeacherTempWarmupHook
from .time_log_hook import TimeLogHook
from .train_speed_hook import TrainSpeedHook
from .uniform_collapse_hook import UniformCollapseHook
from .warm_start_hook import WarmStartHook

__all__ = [
    'AtomicCheckpointHook',
    'BadFileSummaryHook',
    'BatchedRuntimeInfoHook',
    'BaseLRLogHook',
    'BadFileCounter',
    'collect_skipped',
    'DeepClusterHook',
    'DistLossAverageHook',
    'FreezeLastLayerHook',
    'GramTeacherHook',
    'LogIntervalHook',
    'LossWeightScheduleHook',
    'ODCHook',
    'PretrainedInitHook',
    'RunSummaryHook',
    'SwAVQueueHook',
    'TeacherEMAHook',
    'TeacherTempWarmupHook',
    'TimeLogHook',
    'TrainSpeedHook',
    'UniformCollapseHook',
    'WarmStartHook',
]
