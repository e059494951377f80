# Relative Location (Doersch et al. 2015, https://arxiv.org/abs/1505.05192) on the bundled 32x32 demo digits (tools/misc/make_demo_dataset.py):
# a CIFAR-style ResNet-18 of width 16, 4 epochs on CPU, then a kNN
# evaluation on data/demo/val.  See README.md in this folder.
#   python tools/train.py configs/relative_loc/relative-loc_resnet18-w16_1xb64-4e_demo.py
_base_ = [
    '../_base_/datasets/demo_train.py',
    '../_base_/schedules/demo_4e_sgd.py',
    '../_base_/models/resnet18-w16_cifar.py',
]

# upsample to 48 px, then a 3x3 grid of 16 px cells with a 13 px patch at a
# random offset in each (gaps of 0-6 px between neighbours)
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(48, 48), backend='cv2'),
    dict(type='RandomGrayscale', prob=0.66, keep_channels=True),
    dict(type='RelativeLocPatches', patch_size=13),
    dict(type='PackInputs'),
]

train_dataloader = dict(dataset=dict(pipeline=train_pipeline))

model = dict(
    type='RelativeLoc',
    data_preprocessor={{_base_.data_preprocessor}},
    neck=dict(type='RelativeLocNeck', in_channels='auto', out_channels=256),
    head=dict(type='PretextClsHead', in_channels='auto', num_classes=8),
)

optim_wrapper = dict(optimizer=dict(lr=0.1))
