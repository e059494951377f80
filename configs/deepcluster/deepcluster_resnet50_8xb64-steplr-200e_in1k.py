# DeepCluster: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 10000 clusters, PCA-256 whitening, SGD, 200 epochs; no Sobel layer),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/deepcluster/deepcluster_resnet50_8xb64-steplr-200e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/default_runtime.py',
]
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
    type='DeepCluster',
    num_samples=1281167,
    num_classes=_num_classes,
    backbone=dict(type='ResNet', depth=50, norm_cfg=dict(type='BN')),
    neck=dict(type='GlobalAveragePooling'),
    head=dict(
        type='PretextClsHead', in_channels='auto', num_classes=_num_classes
    ),
)
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    sampler=dict(_delete_=True, type='ClusterUniformSampler'),
)
custom_hooks = [
    dict(
        type='DeepClusterHook',
        extract_pipeline=_extract_pipeline,
        pca_dim=256,
        interval=1,
        batch_size=128,
        num_workers=8,
    )
]

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=1e-05),
)
param_scheduler = [
    dict(type='MultiStepLR', by_epoch=True, milestones=[400], gamma=0.1)
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=200)
# a checkpoint every 10 of the 200 epochs, as a run fraction
default_hooks = dict(checkpoint=dict(interval='5%', max_keep_ckpts=3))
auto_scale_lr = dict(base_batch_size=512)
