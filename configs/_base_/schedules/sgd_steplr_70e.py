# The 70-epoch schedule (and runtime) of MMSelfSup's Relative Location and
# Rotation Prediction ImageNet-1k recipes: SGD at lr 0.2 (momentum 0.9,
# weight decay 1e-4), the lr x0.1 at epochs 30 and 50, a checkpoint every
# 10 epochs. Milestones and interval are fractions of the run
# (docs/en/config.md): train_cfg.max_epochs=N alone moves them.
_base_ = '../default_runtime.py'

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.2, momentum=0.9, weight_decay=0.0001),
)
param_scheduler = [
    dict(
        type='MultiStepLR',
        by_epoch=True,
        milestones=['3/7', '5/7'],
        gamma=0.1,
    )
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=70)
default_hooks = dict(checkpoint=dict(interval='1/7', max_keep_ckpts=3))
