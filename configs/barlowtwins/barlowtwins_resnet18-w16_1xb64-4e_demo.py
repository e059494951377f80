# Barlow Twins (Zbontar et al. 2021, https://arxiv.org/abs/2103.03230) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/barlowtwins/barlowtwins_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/default_runtime.py',
]

backbone = dict(
    type='ResNet_CIFAR',
    depth=18,
    stem_channels=16,
    base_channels=16,
    zero_init_residual=True,
)

model = dict(
    type='BarlowTwins',
    data_preprocessor={{_base_.data_preprocessor}},
    backbone=backbone,
    neck=dict(
        type='NonLinearNeck',
        in_channels=128,
        hid_channels=256,
        out_channels=256,
        num_layers=3,
        with_last_bn=False,
        with_last_bn_affine=False,
        with_avg_pool=True,
    ),
    head=dict(
        type='LatentCrossCorrelationHead',
        in_channels=256,
        loss=dict(type='CrossCorrelationLoss'),
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.05, momentum=0.9, weight_decay=5e-4),
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
