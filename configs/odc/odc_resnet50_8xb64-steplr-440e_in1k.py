# ODC: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 10000 clusters, 256-d memory, SGD, 440 epochs),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/odc/odc_resnet50_8xb64-steplr-440e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/default_runtime.py',
]
train_dataloader = dict(batch_size=64, num_workers=8)

_extract_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='ResizeEdge', scale=256, edge='short'),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackInputs'),
]

_num_classes = 10000
# num_samples must equal the number of training images (1281167 for
# ImageNet-1k train).
model = dict(
    type='ODC',
    num_samples=1281167,
    num_classes=_num_classes,
    feat_dim=256,
    memory_momentum=0.5,
    min_cluster=20,
    backbone=dict(type='ResNet', depth=50, norm_cfg=dict(type='BN')),
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=512,
        out_channels=256,
        num_layers=2,
        with_avg_pool=True,
    ),
    head=dict(
        type='PretextClsHead', in_channels='auto', num_classes=_num_classes
    ),
)
custom_hooks = [
    dict(
        type='ODCHook',
        extract_pipeline=_extract_pipeline,
        centroids_update_interval=10,
        deal_with_small_clusters_interval=1,
        batch_size=128,
        num_workers=8,
    )
]

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.06, momentum=0.9, weight_decay=1e-05),
)
# Milestones as fractions of the run (epoch 400 of 440; docs/en/config.md):
# train_cfg.max_epochs=N alone moves them.
param_scheduler = [
    dict(
        type='MultiStepLR',
        by_epoch=True,
        milestones=['10/11'],
        gamma=0.1,
    )
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=440)
# a checkpoint every 10 of the 440 epochs, as a run fraction
default_hooks = dict(checkpoint=dict(interval='1/44', max_keep_ckpts=3))
auto_scale_lr = dict(base_batch_size=512)
