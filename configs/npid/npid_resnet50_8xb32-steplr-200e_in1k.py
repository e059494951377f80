# NPID: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 4096 negatives, T=0.07, SGD, 200 epochs),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/npid/npid_resnet50_8xb32-steplr-200e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=32, num_workers=8)

# num_samples must equal the number of training images (1281167 for
# ImageNet-1k train); the memory bank is num_samples x feat_dim floats.
model = dict(
    type='NPID',
    num_samples=1281167,
    feat_dim=128,
    neg_num=4096,
    bank_momentum=0.5,
    backbone=dict(type='ResNet', depth=50, norm_cfg=dict(type='BN')),
    neck=dict(
        type='LinearNeck',
        in_channels='auto',
        out_channels=128,
        gap_dim=2,
        norm_cfg=None,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.07,
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.03, momentum=0.9, weight_decay=0.0001),
)
# Milestones as fractions of the run (epochs 120 and 160 of 200; docs/en/config.md):
# train_cfg.max_epochs=N alone moves them.
param_scheduler = [
    dict(
        type='MultiStepLR', by_epoch=True, milestones=['60%', '80%'], gamma=0.1
    )
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=200)
# a checkpoint every 10 of the 200 epochs, as a run fraction
default_hooks = dict(checkpoint=dict(interval='5%', max_keep_ckpts=3))
auto_scale_lr = dict(base_batch_size=256)
