# kNN (k=20, T=0.07) of the SimCLR demo backbone (CIFAR ResNet-18 w16) on
# data/demo: train split = bank, val split = queries. About 10 s on CPU.
#   python tools/test.py configs/benchmarks/knn/knn_resnet18-w16_demo.py \
#       work_dirs/simclr_demo/epoch_10.pth
_base_ = [
    '../../_base_/datasets/demo_knn.py',
    '../../_base_/default_runtime.py',
]

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
    # no head: model(x, mode='tensor') then returns the pooled features
    head=None,
)

custom_hooks = [dict(type='PretrainedInitHook')]
