# Rotation Prediction (Gidaris et al. 2018, https://arxiv.org/abs/1803.07728) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/rotation_pred/rotation-pred_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_jitter.py',
    '../_base_/schedules/demo_4e.py',
    '../_base_/models/resnet18-w16_cifar.py',
]


model = dict(
    type='RotationPred',
    data_preprocessor={{_base_.data_preprocessor}},
    head=dict(
        type='PretextClsHead',
        in_channels='auto',
        num_classes=4,
        with_avg_pool=True,
    ),
)

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='SGD', lr=0.1, momentum=0.9, weight_decay=5e-4),
)
auto_scale_lr = dict(base_batch_size=64)
randomness = dict(seed=0)
