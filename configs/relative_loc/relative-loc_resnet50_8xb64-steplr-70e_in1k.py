# Relative Location: the ImageNet-1k recipe of MMSelfSup 0.x (ResNet-50, 3x3 grid of 64 px patches from 255 px crops, SGD, 70 epochs),
# re-implemented in mmssl.  Data: data/imagenet/train/<class>/*.JPEG (labels
# unused).
#   bash tools/dist_train.sh configs/relative_loc/relative-loc_resnet50_8xb64-steplr-70e_in1k.py 8
_base_ = [
    'mmpretrain::_base_/datasets/imagenet_bs512_mae.py',
    '../_base_/schedules/sgd_steplr_70e.py',  # SGD, steps at 30 and 50
]
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='ResizeEdge', scale=292, edge='short'),
    dict(type='RandomCrop', crop_size=255),
    dict(type='RandomGrayscale', prob=0.66, keep_channels=True),
    dict(type='RelativeLocPatches', patch_size=64),
    dict(type='PackInputs'),
]
# _scope_: the dataset dict inherited from mmpretrain's config carries
# _scope_='mmpretrain', whose transform registry lacks RelativeLocPatches
train_dataloader = dict(
    batch_size=64,
    num_workers=8,
    dataset=dict(_scope_='mmssl', pipeline=train_pipeline),
)
model = dict(
    type='RelativeLoc',
    backbone=dict(type='ResNet', depth=50, norm_cfg=dict(type='BN')),
    neck=dict(type='RelativeLocNeck', in_channels='auto', out_channels=4096),
    head=dict(type='PretextClsHead', in_channels='auto', num_classes=8),
)

auto_scale_lr = dict(base_batch_size=512)
