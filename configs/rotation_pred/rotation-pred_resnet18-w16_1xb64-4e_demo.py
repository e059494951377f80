# Rotation Prediction (Gidaris et al. 2018, https://arxiv.org/abs/1803.07728) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/rotation_pred/rotation-pred_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_single_view_jitter.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

# Tall crops (width / height 0.6-0.8) resized to a square: the 8x8 digits
# fill the height of their box but not its width, so with square crops the
# empty side margins give the rotation away (README.md); stretched to fill
# the width too, the rotation has to be read from the digit (kNN 79.11 vs
# 63.23 with square crops).
train_pipeline = _base_.train_pipeline  # noqa: F821
train_pipeline[1]['aspect_ratio_range'] = (0.6, 0.8)  # the crop step
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

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

optim_wrapper = dict(optimizer=dict(lr=0.1))
