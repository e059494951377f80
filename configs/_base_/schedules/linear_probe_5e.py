# The linear-probe demos' schedule (and runtime): 5 epochs of SGD
# (momentum 0.9, no weight decay; the lr is each probe's own) with a
# cosine lr, evaluation and one checkpoint at the end, seed 0;
# PretrainedInitHook loads the backbone named by
# model.backbone.init_cfg.checkpoint. Every length is a fraction of the
# run (docs/en/config.md): train_cfg.max_epochs=N alone rescales them.
_base_ = '../default_runtime.py'

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', momentum=0.9, weight_decay=0.0),
)
_max_epochs = 5  # the schedule and intervals below are run fractions
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        begin=0,
        end='100%',
        convert_to_iter_based=True,
    )
]
train_cfg = dict(
    type='EpochBasedTrainLoop',
    max_epochs=_max_epochs,
    val_interval='100%',
)
val_cfg = dict()
test_cfg = dict()
auto_scale_lr = dict(base_batch_size=64)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(type='CheckpointHook', interval='100%'),
)
randomness = dict(seed=0)
custom_hooks = [dict(type='PretrainedInitHook')]
