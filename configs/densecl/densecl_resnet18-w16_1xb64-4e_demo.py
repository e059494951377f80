# DenseCL (Wang et al. 2021, https://arxiv.org/abs/2011.09157) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/densecl/densecl_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

# MoCo v2's demo fixes (README of configs/mocov2: BatchNorm in the heads,
# a queue of 4 batches, a key encoder that follows the online one) plus a
# small dense weight: with loss_lambda=0.5 the dense loss on the 4x4 map
# falls while the global one does not move and the demo ends below its
# BatchNorm-recalibrated random baseline; with 0.1 it learns (README.md).
model = dict(
    type='DenseCL',
    queue_len=256,
    feat_dim=64,
    momentum=0.99,
    loss_lambda=0.1,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(
        type='DenseCLBNNeck',
        in_channels='auto',
        hid_channels=128,
        out_channels=64,
        num_grid=None,
        with_last_bn=True,
    ),
    head=dict(
        type='ContrastiveHead',
        loss=dict(type='CrossEntropyLoss'),
        temperature=0.2,
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.06))
