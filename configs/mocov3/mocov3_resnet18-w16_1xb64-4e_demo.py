# MoCo v3 (Chen et al. 2021, https://arxiv.org/abs/2104.02057) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/mocov3/mocov3_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_two_view.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

model = dict(
    type='MoCoV3',
    base_momentum=0.01,
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(
        type='NonLinearNeck',
        in_channels='auto',
        hid_channels=256,
        out_channels=64,
        num_layers=2,
        with_bias=False,
        with_last_bn=True,
        with_last_bn_affine=False,
        with_last_bias=False,
        with_avg_pool=True,
    ),
    head=dict(
        type='MoCoV3Head',
        predictor=dict(
            type='NonLinearNeck',
            in_channels='auto',
            hid_channels=256,
            out_channels=64,
            num_layers=2,
            with_bias=False,
            with_last_bn=False,
            with_last_bn_affine=False,
            with_last_bias=False,
            with_avg_pool=False,
        ),
        loss=dict(type='CrossEntropyLoss', loss_weight=2 * 0.2),
        temperature=0.2,
    ),
)

optim_wrapper = dict(optimizer=dict(lr=0.1))
