# Runtime defaults shared by every mmssl config; the runner
# (SSLRunner) and the unresolved-config guard come from ssl_runner.py.
_base_ = './ssl_runner.py'
default_scope = 'mmssl'
# These signals only set a flag; at the next iteration all ranks save a
# checkpoint and exit with 128 + signum (exit_code=... overrides it).
signal_cfg = dict(signals=['SIGTERM', 'SIGUSR1', 'SIGINT'], exit_code=None)
# Also save a safety checkpoint every N minutes (--checkpoint-every-minutes).
checkpoint_every_minutes = None

default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=50),
    param_scheduler=dict(type='ParamSchedulerHook'),
    # Crash-safe saves + RNG states (docs/en/checkpoints.md).
    checkpoint=dict(type='AtomicCheckpointHook', interval=1, max_keep_ckpts=3),
    sampler_seed=dict(type='DistSamplerSeedHook'),
)

env_cfg = dict(
    cudnn_benchmark=False,
    mp_cfg=dict(mp_start_method='fork', opencv_num_threads=0),
    # 'nccl' on GPUs; tools/train.py switches to 'gloo' without CUDA.
    dist_cfg=dict(backend='nccl'),
)

vis_backends = [dict(type='LocalVisBackend')]
visualizer = dict(type='UniversalVisualizer', vis_backends=vis_backends)

log_processor = dict(window_size=10)  # its type: ssl_runner.py's guard
log_level = 'INFO'
load_from = None
resume = False
randomness = dict(seed=None, deterministic=False)
