# A tiny SimCLR for tool tests: CIFAR ResNet-18 of width 4 on 32 px images.
_base_ = ['../../../configs/_base_/default_runtime.py']

model = dict(
    type='SimCLR',
    data_preprocessor=dict(
        type='SelfSupDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    backbone=dict(
        type='ResNet_CIFAR', depth=18, stem_channels=4, base_channels=4
    ),
    neck=dict(
        type='NonLinearNeck',
        in_channels=32,
        hid_channels=32,
        out_channels=16,
        num_layers=2,
        with_avg_pool=True,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.2,
    ),
)
