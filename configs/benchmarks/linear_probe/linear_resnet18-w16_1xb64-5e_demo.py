# Linear probe of the SimCLR demo backbone (CIFAR ResNet-18 w16, frozen,
# BN statistics frozen too) on data/demo: 5 epochs on CPU in well under a
# minute on idle cores.
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_resnet18-w16_1xb64-5e_demo.py \
#       --cfg-options model.backbone.init_cfg.checkpoint=work_dirs/simclr_demo/epoch_10.pth
_base_ = [
    '../../_base_/datasets/demo_linear.py',  # data/demo, flips, top-1/top-5
    '../../_base_/default_runtime.py',
]

model = dict(
    type='ImageClassifier',
    data_preprocessor=dict(
        type='ClsDataPreprocessor',
        num_classes=10,
        mean=[33.0, 33.0, 33.0],
        std=[60.0, 60.0, 60.0],
        to_rgb=True,
    ),
    backbone=dict(
        type='ResNet_CIFAR',
        depth=18,
        stem_channels=16,
        base_channels=16,
        frozen_stages=4,
        norm_eval=True,
        init_cfg=dict(type='Pretrained', checkpoint='', prefix='backbone.'),
    ),
    neck=dict(type='GlobalAveragePooling'),
    head=dict(
        type='LinearClsHead',
        num_classes=10,
        in_channels='auto',
        loss=dict(type='CrossEntropyLoss'),
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.5, momentum=0.9, weight_decay=0.0),
)
_max_epochs = 5  # the schedule and intervals below are run fractions
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        by_epoch=True,
        begin=0,
        end='100%',
        convert_to_iter_based=True,
    )
]
train_cfg = dict(
    type='EpochBasedTrainLoop',
    max_epochs=_max_epochs,
    val_interval='100%',
)
val_cfg = dict()
test_cfg = dict()
auto_scale_lr = dict(base_batch_size=64)
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(type='CheckpointHook', interval='100%'),
)
randomness = dict(seed=0)
custom_hooks = [dict(type='PretrainedInitHook')]
