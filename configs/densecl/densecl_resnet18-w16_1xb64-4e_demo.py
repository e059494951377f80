# DenseCL (Wang et al. 2021, https://arxiv.org/abs/2011.09157) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/densecl/densecl_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_knn.py',
    '../_base_/default_runtime.py',
]

data_preprocessor = dict(
    type='SelfSupDataPreprocessor',
    mean=[33.0, 33.0, 33.0],
    std=[60.0, 60.0, 60.0],
    to_rgb=True,
)

view_pipeline = [
    dict(
        type='RandomResizedCrop',
        scale=32,
        crop_ratio_range=(0.5, 1.0),
        backend='cv2',
    ),
    dict(
        type='RandomApply',
        transforms=[dict(type='ColorJitter', brightness=0.4, contrast=0.4)],
        prob=0.8,
    ),
]
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='MultiView', num_views=2, transforms=[view_pipeline]),
    dict(type='PackInputs'),
]
train_dataloader = dict(
    batch_size=64,
    num_workers=2,
    persistent_workers=True,
    drop_last=True,
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    dataset=dict(
        type='ImageFolderDataset',
        data_root='data/demo/train',
        pipeline=train_pipeline,
    ),
)

backbone = dict(
    type='ResNet_CIFAR',
    depth=18,
    stem_channels=16,
    base_channels=16,
    zero_init_residual=True,
)

model = dict(
    type='DenseCL',
    queue_len=1024,
    feat_dim=64,
    momentum=0.01,
    loss_lambda=0.5,
    data_preprocessor=data_preprocessor,
    backbone=backbone,
    neck=dict(
        type='DenseCLNeck',
        in_channels=128,
        hid_channels=128,
        out_channels=64,
        num_grid=None,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.2,
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.06, momentum=0.9, weight_decay=5e-4),
)

max_epochs = 4
param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=True,
        begin=0,
        end=1,
        convert_to_iter_based=True,
    ),
    dict(
        type='CosineAnnealingLR',
        T_max=max_epochs - 1,
        by_epoch=True,
        begin=1,
        end=max_epochs,
        convert_to_iter_based=True,
    ),
]
train_cfg = dict(
    type='EpochBasedTrainLoop', max_epochs=max_epochs, val_interval=max_epochs
)
auto_scale_lr = dict(base_batch_size=64)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval=max_epochs, max_keep_ckpts=1),
)
randomness = dict(seed=0)
