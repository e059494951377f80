# DINO with mmpretrain's ResNet-50 (pooled last stage, 2048-d) on
# ImageNet-1k: 2x224 + 6x96 crops, BatchNorm in the head MLP, LARS replaced
# by SGD+momentum (lr 0.3 x batch / 256 as the DINO RN50 run), weight decay
# 1e-4 -> 1e-4 (constant), teacher momentum 0.996 -> 1, teacher temp
# 0.04 -> 0.07 over 50 epochs, no gradient clipping, last layer frozen for
# the first epoch. No iBOT patch loss for CNNs.
_base_ = [
    './dino_vit-s16_8xb128-100e_in1k.py',
    '../_base_/schedules/warmup_cosine.py',
    '../_base_/schedules/teacher_student_hooks.py',
    '../_base_/datasets/multicrop_224px.py',
]

train_pipeline = _base_.pop('_multicrop_224px')['dino_resnet50']  # noqa: F821
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
model = dict(
    backbone=dict(
        _delete_=True,
        type='ResNet',
        depth=50,
        norm_cfg=dict(type='SyncBN'),
        zero_init_residual=True,
    ),
    head=dict(use_bn=True, norm_last_layer=True),
)
optim_wrapper = dict(
    _delete_=True,
    type='NaNGuardOptimWrapper',
    max_consecutive_skips=10,
    optimizer=dict(
        type='SGD', lr=0.3 * 1024 / 256, momentum=0.9, weight_decay=1e-4
    ),
    paramwise_cfg=dict(flat_decay_mult=0.0),
)
param_scheduler = _base_.pop('_warmup_cosine')['dino_resnet50']  # noqa: F821
custom_hooks = _base_.pop('_teacher_student_hooks')['dino_resnet50']  # noqa: F821
