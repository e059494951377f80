# Linear probe of the SimCLR demo backbone (CIFAR ResNet-18 w16, frozen,
# BN statistics frozen too) on data/demo: 5 epochs on CPU in well under a
# minute on idle cores.
#   python tools/train.py \
#       configs/benchmarks/linear_probe/linear_resnet18-w16_1xb64-5e_demo.py \
#       --cfg-options model.backbone.init_cfg.checkpoint=work_dirs/simclr_demo/epoch_10.pth
_base_ = [
    '../../_base_/datasets/demo_linear.py',  # data/demo, flips, top-1/top-5
    '../../_base_/schedules/linear_probe_5e.py',  # SGD, cosine, 5 epochs
    '../../_base_/models/resnet18-w16_digits_cls.py',
]

model = dict(
    data_preprocessor=dict(num_classes=10),
    backbone=dict(frozen_stages=4, norm_eval=True),  # BN statistics too
    head=dict(
        type='LinearClsHead',
        num_classes=10,
        in_channels='auto',
        loss=dict(type='CrossEntropyLoss'),
    ),
)
optim_wrapper = dict(optimizer=dict(lr=0.5))
