# The demo CIFAR ResNet-18 (width 16) as a frozen feature extractor on the
# digits, for the kNN and linear-probe demos: globally pooled features,
# the demo digits' pixel statistics, the backbone's weights from
# model.backbone.init_cfg.checkpoint (prefix 'backbone.'). Each benchmark
# adds its head.
model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    backbone=dict(
        type='ResNet_CIFAR',
        depth=18,
        stem_channels=16,
        base_channels=16,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.'),
    ),
    neck=dict(type='GlobalAveragePooling'),
)
