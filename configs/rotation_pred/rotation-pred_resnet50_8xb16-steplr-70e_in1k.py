# Rotation Prediction: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 8 GPUs x 16 images x 4 rotations, SGD, 70 epochs),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/rotation_pred/rotation-pred_resnet50_8xb16-steplr-70e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/schedules/sgd_steplr_70e.py',  # SGD, steps at 30 and 50
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

auto_scale_lr = dict(base_batch_size=128)
