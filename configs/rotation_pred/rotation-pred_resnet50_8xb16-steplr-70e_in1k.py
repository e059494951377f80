# Rotation Prediction: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 8 GPUs x 16 images x 4 rotations, SGD, 70 epochs),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/rotation_pred/rotation-pred_resnet50_8xb16-steplr-70e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=16, num_workers=8)

model = dict(
    type='RotationPred',
    backbone=dict(type='ResNet', depth=50, norm_cfg=dict(type='BN')),
    head=dict(
        type='PretextClsHead',
        in_channels='auto',
        num_classes=4,
        with_avg_pool=True,
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.2, momentum=0.9, weight_decay=0.0001),
)
# Milestones as fractions of the run (epochs 30 and 50 of 70; docs/en/config.md):
# train_cfg.max_epochs=N alone moves them.
param_scheduler = [
    dict(
        type='MultiStepLR',
        by_epoch=True,
        milestones=['42.857142857142854%', '71.42857142857143%'],
        gamma=0.1,
    )
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=70)
# a checkpoint every 10 of the 70 epochs, as a run fraction
default_hooks = dict(
    checkpoint=dict(interval='14.285714285714286%', max_keep_ckpts=3)
)
auto_scale_lr = dict(base_batch_size=128)
