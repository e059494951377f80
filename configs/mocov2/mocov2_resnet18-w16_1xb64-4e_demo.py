# MoCo v2 (Chen et al. 2020, https://arxiv.org/abs/2003.04297) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mocov2/mocov2_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e.py',
    '../_base_/models/resnet18-w16_cifar.py',
]


model = dict(
    type='MoCo',
    queue_len=1024,
    feat_dim=64,
    momentum=0.01,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(
        type='MoCoV2Neck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        with_avg_pool=True,
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

auto_scale_lr = dict(base_batch_size=64)
randomness = dict(seed=0)
